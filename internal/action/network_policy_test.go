package action

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAddrKind(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":              "loopback",
		"127.8.9.10":             "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:10.0.0.1":        "private",
		"10.1.2.3":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"169.254.169.254":        "cloud metadata",
		"::ffff:169.254.169.254": "cloud metadata",
		"fd00:ec2::254":          "cloud metadata",
		"100.100.100.200":        "cloud metadata",
		"169.254.1.1":            "link-local",
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"0.1.2.3":                "this-network",
		"100.64.0.1":             "shared (carrier-grade NAT)",
		"239.1.2.3":              "multicast",
		"255.255.255.255":        "broadcast",
		"240.0.0.1":              "reserved",
		"64:ff9b::7f00:1":        "loopback", // NAT64 of 127.0.0.1
		"64:ff9b::a9fe:a9fe":     "cloud metadata",
		"2002:7f00:1::":          "loopback", // 6to4 of 127.0.0.1
		"::7f00:1":               "loopback", // IPv4-compatible
		"8.8.8.8":                "",
		"172.32.0.1":             "",
		"100.128.0.1":            "",
		"2606:4700::1111":        "",
		"64:ff9b::808:808":       "",
		"::ffff:1.1.1.1":         "",
	} {
		if got := AddrKind(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

func TestParseNetworkAllow(t *testing.T) {
	p, err := ParseNetworkAllow([]string{"10.0.0.0/8, api.Internal.", "::ffff:192.168.0.0/112", "[::1]", "*.corp.example"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Restricted || len(p.Allow) != 3 || len(p.AllowHosts) != 2 {
		t.Fatalf("%+v", p)
	}
	for _, c := range []struct {
		host string
		addr string
		ok   bool
	}{
		{"x", "10.9.9.9", true},
		{"x", "::ffff:10.9.9.9", true},
		{"x", "192.168.3.4", true}, // the mapped CIDR, as IPv4
		{"x", "::1", true},
		{"x", "127.0.0.1", false},
		{"api.internal", "127.0.0.1", true},
		{"API.internal.", "127.0.0.1", true},
		{"db.corp.example", "10.0.0.1", true},
		{"corp.example", "172.16.0.1", false},
		{"x", "8.8.8.8", true},
	} {
		err := p.CheckAddr(c.host, netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v, want allowed %v", c.host, c.addr, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrNetworkNotAllowed) {
			t.Errorf("%s: %v is no refusal", c.addr, err)
		}
	}
	for _, bad := range []string{"http://x", "host:80", "10.0.0.0/33", "a b", "*"} {
		if _, err := ParseNetworkAllow([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (NetworkPolicy{}).CheckAddr("x", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatalf("the zero policy refuses: %v", err)
	}
}

// secretAdmin is a server on loopback that counts its requests.
func secretAdmin(t *testing.T, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("the admin secret"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// getThrough runs the http action through p's transport.
func getThrough(p NetworkPolicy, rawURL string) (any, error) {
	return HTTP{Transport: p.Transport()}.Run(context.Background(), Call{Input: map[string]any{"url": rawURL, "parse": "text"}})
}

// wantRefused asserts a refusal of the policy: its code, not retryable,
// the flag named, and the server never reached.
func wantRefused(t *testing.T, what string, out any, err error, hits *atomic.Int32) {
	t.Helper()
	var ae *Error
	if err == nil || !errors.Is(err, ErrNetworkNotAllowed) || !errors.As(err, &ae) || ae.Code != CodeNetworkNotAllowed || Retryable(err) {
		t.Fatalf("%s: %v, %v: want a NETWORK_NOT_ALLOWED refusal", what, out, err)
	}
	if !strings.Contains(err.Error(), "--allow-network") || !strings.Contains(err.Error(), "--allow-private-network") {
		t.Fatalf("%s: the message names no flag: %v", what, err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%s: the server was reached %d times", what, n)
	}
}

// Restricted, the http action reaches no loopback server, by address, by
// a name that resolves to it or by its IPv4-mapped IPv6 form; the
// operator's allowance (an address, a CIDR, a name) lets it through.
func TestHTTPNetworkPolicyRefusesLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := secretAdmin(t, &hits)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	restricted := NetworkPolicy{Restricted: true}
	for _, target := range []string{
		srv.URL + "/admin",
		"http://localhost:" + port + "/admin",
		"http://[::ffff:127.0.0.1]:" + port + "/admin",
	} {
		out, err := getThrough(restricted, target)
		wantRefused(t, target, out, err, &hits)
	}

	for _, allow := range []string{"127.0.0.1", "127.0.0.0/8", "localhost"} {
		p, err := ParseNetworkAllow([]string{allow})
		if err != nil {
			t.Fatal(err)
		}
		target := srv.URL + "/admin"
		if allow == "localhost" {
			target = "http://localhost:" + port + "/admin"
		}
		out, err := getThrough(p, target)
		if err != nil || out.(map[string]any)["body"] != "the admin secret" {
			t.Fatalf("allowed %s: %v, %v", allow, out, err)
		}
	}
	// The zero policy (the CLI's) does not restrict.
	if out, err := getThrough(NetworkPolicy{}, srv.URL); err != nil {
		t.Fatalf("unrestricted: %v, %v", out, err)
	}
}

// A redirect from an allowed address to a refused one is refused: the
// check is on every connection, not on the URL a step gave.
func TestHTTPNetworkPolicyRefusesRedirect(t *testing.T) {
	var hits atomic.Int32
	admin := secretAdmin(t, &hits)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	front := httptest.NewUnstartedServer(http.RedirectHandler(admin.URL+"/admin", http.StatusFound))
	front.Listener.Close()
	front.Listener = ln
	front.Start()
	t.Cleanup(front.Close)

	p, err := ParseNetworkAllow([]string{"127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := getThrough(p, front.URL+"/start")
	wantRefused(t, "redirect", out, err, &hits)
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("the refusal names not the address refused: %v", err)
	}
}

// Through a proxy, the target is checked as written: an address or a
// metadata name is refused before the proxy is asked.
func TestNetworkPolicyProxyTarget(t *testing.T) {
	proxyURL, _ := url.Parse("http://proxy.example:3128")
	proxy := NetworkPolicy{Restricted: true}.proxyThrough(func(*http.Request) (*url.URL, error) { return proxyURL, nil })
	for target, refused := range map[string]bool{
		"http://169.254.169.254/latest/meta-data/":            true,
		"http://metadata.google.internal/computeMetadata/v1/": true,
		"http://[::1]:8080/":                                  true,
		"https://api.example.com/v1":                          false,
		"http://8.8.8.8/":                                     false,
	} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		u, err := proxy(req)
		if refused != errors.Is(err, ErrNetworkNotAllowed) || !refused && u != proxyURL {
			t.Errorf("%s: %v, %v (refused: %v)", target, u, err, refused)
		}
	}
}
