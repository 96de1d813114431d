package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, `run` exports its run's and
// step's spans over OTLP/HTTP before it exits (a real collector endpoint:
// an HTTP server decoding the protobuf requests).
func TestRunExportsTracesOverOTLP(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collpb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name] = true
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collpb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SDK_DISABLED", "")

	code, out, errOut := runOut(t, t.TempDir(), "run", write(t, "hello.yaml", validYAML), "--json")
	if code != ExitOK {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if !names["run hello"] || !names["step greet"] {
		t.Fatalf("exported spans: %v", names)
	}
}
