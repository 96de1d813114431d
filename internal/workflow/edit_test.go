package workflow

import "testing"

func TestWithNameKeepsEverythingElse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"version: 1\nname: old # keep\nsteps: []\n", "version: 1\nname: brand-new # keep\nsteps: []\n"},
		{"version: 1\nname: \"old\"\nsteps: []\n", "version: 1\nname: \"brand-new\"\nsteps: []\n"},
		{"version: 1\nname: 'old'\n", "version: 1\nname: 'brand-new'\n"},
		{"{\"version\": 1, \"name\": \"old\", \"steps\": [{\"id\": \"name\"}]}", "{\"version\": 1, \"name\": \"brand-new\", \"steps\": [{\"id\": \"name\"}]}"},
		{"# é comment\nsteps: [] # ünïcode\nname:   old\n", "# é comment\nsteps: [] # ünïcode\nname:   brand-new\n"},
	} {
		src, vs := Parse([]byte(c.in))
		if src == nil {
			t.Fatalf("%q: %v", c.in, vs)
		}
		got, err := src.WithName("brand-new")
		if err != nil || string(got) != c.want {
			t.Errorf("%q:\n got %q %v\nwant %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"version: 1\nsteps: []\n", "name: \"o\\u006cd\"\n", "name: >\n  old\n"} {
		src, _ := Parse([]byte(in))
		if src == nil {
			continue
		}
		if got, err := src.WithName("x"); err == nil {
			t.Errorf("%q: renamed to %q, want an error", in, got)
		}
	}
}
