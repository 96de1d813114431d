package action

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"stepwise.dev/stepwise/code"
)

// CodeNetworkNotAllowed is the stable error code of a connection the
// network policy refuses: an address of this machine or its private
// network that the server's callers may not reach.
const CodeNetworkNotAllowed = code.NetworkNotAllowed

// ErrNetworkNotAllowed matches every refusal of the network policy
// (errors.Is).
var ErrNetworkNotAllowed = errors.New(CodeNetworkNotAllowed)

// NetworkRefusal is the policy's refusal of one connection. Its message
// starts with the code and names the flag that would allow it.
type NetworkRefusal struct {
	// Host is the host as the request named it (a name or an address).
	Host string
	// Addr is the address refused; invalid when the name itself was.
	Addr netip.Addr
	// Kind says what the address is: loopback, private, link-local,
	// cloud metadata…
	Kind string
}

func (r *NetworkRefusal) Error() string {
	what := r.Host
	allow := r.Host
	if r.Addr.IsValid() {
		allow = r.Addr.String()
		if r.Addr.String() != strings.Trim(r.Host, "[]") {
			what = fmt.Sprintf("%s (%s)", r.Host, r.Addr)
		}
	}
	article := "a"
	if r.Kind != "" && strings.ContainsRune("aeiou", rune(r.Kind[0])) {
		article = "an"
	}
	return fmt.Sprintf("%s: %s is %s %s address, and this server does not connect to such addresses for its callers; "+
		"the operator allows it by starting the server with --allow-network %s (or a CIDR holding it), or every address with --allow-private-network",
		CodeNetworkNotAllowed, what, article, r.Kind, allow)
}

// Is makes errors.Is(err, ErrNetworkNotAllowed) hold.
func (r *NetworkRefusal) Is(target error) bool { return target == ErrNetworkNotAllowed }

// NetworkPolicy says which addresses actions may connect to on behalf of
// whoever wrote a workflow (http, catalog operations, an mcp step's url,
// a catalog imported from a URL). The zero value does not restrict: the
// local CLI, whose user could make the request anyway, leaves it so;
// `stepwise serve` restricts it, so that an agent cannot make the server
// fetch from itself, its private network or a cloud metadata service
// (SSRF).
//
// The check applies to the address each connection is actually made to,
// after the name was resolved: a name that resolves to a refused address
// (DNS rebinding) and a redirect to one are refused alike. Through a proxy
// (HTTP_PROXY, HTTPS_PROXY), the connection is made to the proxy, which
// the policy checks; the target's name is checked as written (an address
// or a known metadata name), since the proxy resolves it.
type NetworkPolicy struct {
	// Restricted refuses loopback, private, link-local, shared (CGNAT),
	// reserved and cloud metadata addresses and names, but those Allow
	// and AllowHosts list.
	Restricted bool
	// Allow lists the address ranges allowed anyway.
	Allow []netip.Prefix
	// AllowHosts lists the host names allowed anyway, whatever they
	// resolve to: "name" exactly, "*.name" any name under it.
	AllowHosts []string
}

// ParseNetworkAllow reads --allow-network values into a restricted policy
// that allows them: host names (api.internal, *.corp.example), addresses
// (10.1.2.3, ::1) and CIDRs (10.0.0.0/8); a value may list several,
// comma-separated.
func ParseNetworkAllow(values []string) (NetworkPolicy, error) {
	p := NetworkPolicy{Restricted: true}
	for _, value := range values {
		for _, v := range strings.Split(value, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			if strings.Contains(v, "/") {
				pfx, err := netip.ParsePrefix(v)
				if err != nil {
					return NetworkPolicy{}, fmt.Errorf("%q: not a CIDR (e.g. 10.0.0.0/8): %v", v, err)
				}
				p.Allow = append(p.Allow, unmapPrefix(pfx.Masked()))
				continue
			}
			if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
				a = a.Unmap().WithZone("")
				p.Allow = append(p.Allow, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			name := normalHost(v)
			if !validHostPattern(name) {
				return NetworkPolicy{}, fmt.Errorf("%q: give a host name (api.internal, *.corp.example), an address or a CIDR, without a scheme or port", v)
			}
			p.AllowHosts = append(p.AllowHosts, name)
		}
	}
	return p, nil
}

// unmapPrefix writes an IPv4-mapped IPv6 range as the IPv4 range it is.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// validHostPattern reports whether s is a host name, or *. and one.
func validHostPattern(s string) bool {
	s = strings.TrimPrefix(s, "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// normalHost is a host name as compared: lower case, no trailing dot.
func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// allowsHost reports whether the operator allowed this host by name.
func (p NetworkPolicy) allowsHost(host string) bool {
	h := normalHost(host)
	return slices.ContainsFunc(p.AllowHosts, func(entry string) bool {
		if suffix, ok := strings.CutPrefix(entry, "*."); ok {
			return strings.HasSuffix(h, "."+suffix)
		}
		return h == entry
	})
}

// metadataNames are the host names of cloud metadata services (they
// resolve to link-local addresses, refused anyway; the names are refused
// before anything is resolved).
var metadataNames = []string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}

// checkName refuses a host by its name, before it is resolved.
func (p NetworkPolicy) checkName(host string) error {
	if !p.Restricted || p.allowsHost(host) {
		return nil
	}
	if slices.Contains(metadataNames, normalHost(host)) {
		return &NetworkRefusal{Host: host, Kind: "cloud metadata"}
	}
	return nil
}

// CheckAddr refuses an address the policy does not let callers reach;
// host is the name the request gave for it (for the message, and for
// names the operator allowed).
func (p NetworkPolicy) CheckAddr(host string, a netip.Addr) error {
	if !p.Restricted || p.allowsHost(host) {
		return nil
	}
	a = a.WithZone("")
	plain := a.Unmap()
	kind := AddrKind(plain)
	if kind == "" {
		return nil
	}
	if slices.ContainsFunc(p.Allow, func(pfx netip.Prefix) bool { return pfx.Contains(plain) }) {
		return nil
	}
	return &NetworkRefusal{Host: host, Addr: plain, Kind: kind}
}

// reservedRanges are ranges no public service is on, with what they are.
var reservedRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("100::/64"), "reserved"},
}

// metadataAddrs are the addresses of cloud metadata services.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// AddrKind says what kind of non-public address a is — "loopback",
// "private", "link-local", "cloud metadata", … — or "" for a public one.
// IPv4 addresses written as IPv6 (mapped, NAT64, 6to4, compatible) are
// what the IPv4 address is.
func AddrKind(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case slices.Contains(metadataAddrs, a):
		return "cloud metadata"
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, r := range reservedRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	if v4, ok := embeddedIPv4(a); ok {
		return AddrKind(v4)
	}
	return ""
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	compatible = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 is the IPv4 address an IPv6 address stands for: NAT64
// (the last 32 bits), 6to4 (bits 16 to 48), IPv4-compatible (the last 32
// bits).
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Local.Contains(a), compatible.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// DialContext returns d's DialContext checking every connection against
// the policy: the host's name first, then, once it is resolved, the
// address each attempt connects to (net.Dialer.Control). Unrestricted, it
// is d's own.
func (p NetworkPolicy) DialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	if !p.Restricted {
		return d.DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if p.allowsHost(host) {
			return d.DialContext(ctx, network, address)
		}
		if err := p.checkName(host); err != nil {
			return nil, err
		}
		guarded := *d
		control := d.Control
		guarded.Control = func(network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &NetworkRefusal{Host: host, Kind: "unrecognized"}
			}
			if err := p.CheckAddr(host, ap.Addr()); err != nil {
				return err
			}
			if control != nil {
				return control(network, address, c)
			}
			return nil
		}
		return guarded.DialContext(ctx, network, address)
	}
}

// Transport returns an HTTP transport that connects only where the policy
// allows (otherwise http.DefaultTransport's settings: proxies from the
// environment, keep-alives, HTTP/2). Unrestricted, it is
// http.DefaultTransport itself.
func (p NetworkPolicy) Transport() http.RoundTripper {
	if !p.Restricted {
		return http.DefaultTransport
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	t.Proxy = p.proxyThrough(http.ProxyFromEnvironment)
	return t
}

// proxyThrough is proxy with the target checked as far as it can be
// before the proxy resolves it: its name, or the address it is.
func (p NetworkPolicy) proxyThrough(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		u, err := proxy(req)
		if err != nil || u == nil {
			return u, err
		}
		host := req.URL.Hostname()
		if err := p.checkName(host); err != nil {
			return nil, err
		}
		if a, err := netip.ParseAddr(host); err == nil {
			if err := p.CheckAddr(host, a); err != nil {
				return nil, err
			}
		}
		return u, nil
	}
}
