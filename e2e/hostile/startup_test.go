//go:build linux

package hostile

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Item 10: serve refuses, before it says where it serves, an HTTP set-up
// that would not be what the operator meant: a key pair it cannot load,
// a non-loopback address whose bearer tokens would cross the network in
// clear.

// proxyToken is the bearer token of the cases that serve on every
// interface (at least 16 characters).
const proxyToken = "hostile-suite-token-0123456789"

// writeKeyPair writes a self-signed certificate for 127.0.0.1 and its key
// to home as cert.pem and key.pem.
func writeKeyPair(t *testing.T, home string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hostile"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
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
	for name, block := range map[string]*pem.Block{"cert.pem": {Type: "CERTIFICATE", Bytes: der}, "key.pem": {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(home, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// serves calls run_list and wants an answer: the outcome "ok".
func serves(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	r, err := c.Tool(ctx, "run_list", map[string]any{"limit": 1})
	if err != nil {
		return "", err
	}
	if r.IsError {
		return r.ErrorCode(), nil
	}
	return "ok", nil
}

// startupCases are item 10's cases.
func startupCases() []Case {
	return []Case{
		{
			Name: "start: --tls-cert KEY --tls-key CERT (swapped)", Transport: HTTP, Setup: writeKeyPair,
			Flags:   []string{"--tls-cert", "{home}/key.pem", "--tls-key", "{home}/cert.pem"},
			Refuses: 2, Want: "exit 2", RefusalLine: "(the certificate, then its private key, both PEM)",
		},
		{
			Name: "start: --http 0.0.0.0:0 --auth-token T without TLS", Transport: HTTP,
			Flags:   []string{"--http=0.0.0.0:0", "--auth-token", proxyToken},
			Refuses: 2, Want: "exit 2", RefusalLine: "bearer tokens must not cross the network in clear",
		},
		{
			Name: "start: --http 0.0.0.0:0 --auth-token T --behind-tls-proxy", Transport: HTTP,
			Flags: []string{"--http=0.0.0.0:0", "--auth-token", proxyToken, "--behind-tls-proxy"}, Token: proxyToken,
			Want: "ok", Run: serves,
		},
	}
}
