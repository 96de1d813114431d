package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A restarted run's form is filled in with the earlier answers, marked as
// such; a first run's is not.
func TestFormOffersTheEarlierAnswer(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	csrf := d.login(c)
	id := d.start("ask-things")
	const hint = "your earlier answer"
	for _, answer := range []string{"Ada", "4"} {
		v := d.waitStatus(id)
		_, body, _ := d.get(c, "/runs/"+id)
		if strings.Contains(body, hint) {
			t.Fatalf("a first run's form says %q", hint)
		}
		if code, _, _ := d.post(c, "/runs/"+id+"/answer", url.Values{csrfField: {csrf}, "seq": {itoa(v.Pause.Seq)}, "value": {answer}}); code != http.StatusSeeOther {
			t.Fatalf("answer %s: %d", answer, code)
		}
	}
	if v := d.waitStatus(id); v.Status != "succeeded" {
		t.Fatalf("run %s", v.Status)
	}
	again, err := d.svc.RestartRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ want, answer string }{{">Ada</textarea>", "Ada"}, {`value="4"`, "4"}} {
		want := x.want
		v := d.waitStatus(again)
		code, body, _ := d.get(c, "/runs/"+again)
		if code != http.StatusOK || !strings.Contains(body, want) || !strings.Contains(body, hint) {
			t.Fatalf("restarted run's form, want %s and %q:\n%s", want, hint, body)
		}
		if code, _, _ := d.post(c, "/runs/"+again+"/answer", url.Values{csrfField: {csrf}, "seq": {itoa(v.Pause.Seq)}, "value": {x.answer}}); code != http.StatusSeeOther {
			t.Fatalf("answer: %d", code)
		}
	}
	if v := d.waitStatus(again); v.Status != "succeeded" || v.Outputs["name"] != "Ada" {
		t.Fatalf("restarted run %s %v", v.Status, v.Outputs)
	}
}
