//go:build unix

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stepwise test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// refusedAtStart runs serve with args and fails unless it exits 2 with
// want on stderr, having announced nothing.
func refusedAtStart(t *testing.T, want string, args ...string) {
	t.Helper()
	cmd := exec.Command(sharedBinary(t), append([]string{"--home", t.TempDir(), "serve"}, args...)...)
	cmd.Stdin = strings.NewReader("")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still serving after 30s: %s", args, out)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), want) {
		t.Fatalf("%v: want exit 2 saying %q, got %v: %s", args, want, err, out)
	}
	if strings.Contains(string(out), "serving MCP") {
		t.Fatalf("%v: announced before it failed: %s", args, out)
	}
}

// startedHTTP starts serve with args and returns the URL it announces.
func startedHTTP(t *testing.T, args ...string) string {
	t.Helper()
	u, _ := serveProc(t, sharedBinary(t), append([]string{"--home", t.TempDir(), "serve"}, args...)...)
	return u
}

// `serve --http` checks everything before it announces where it serves:
// a key pair that does not load (swapped files, a missing file) is a usage
// error, and so is a non-loopback address without TLS unless the operator
// says a TLS-terminating proxy is in front (issue 21, item 10).
func TestServeHTTPChecksBeforeAnnouncing(t *testing.T) {
	cert, key := selfSigned(t)
	const token = "a-long-enough-test-token"
	refusedAtStart(t, "--tls-cert", "--http", "127.0.0.1:0", "--tls-cert", key, "--tls-key", cert)
	refusedAtStart(t, "--tls-cert", "--http", "127.0.0.1:0", "--tls-cert", filepath.Join(t.TempDir(), "missing.pem"), "--tls-key", key)
	refusedAtStart(t, "--behind-tls-proxy", "--http", "0.0.0.0:0", "--auth-token", token)
	refusedAtStart(t, "--auth-token", "--http", "0.0.0.0:0", "--behind-tls-proxy")
	refusedAtStart(t, "need --http", "--behind-tls-proxy")

	// The right files: HTTPS, answered with that certificate.
	url := startedHTTP(t, "--http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("announced %s", url)
	}
	certPEM, _ := os.ReadFile(cert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	res, err := hc.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("healthz over TLS: %d", res.StatusCode)
	}

	// Non-loopback with tokens: with TLS, or behind a TLS proxy, it serves.
	if url := startedHTTP(t, "--http", "0.0.0.0:0", "--auth-token", token, "--tls-cert", cert, "--tls-key", key); !strings.HasPrefix(url, "https://") {
		t.Fatalf("with TLS: announced %s", url)
	}
	startedHTTP(t, "--http", "0.0.0.0:0", "--auth-token", token, "--behind-tls-proxy")
}
