// Package httptool is the network side of HTTP tools: a client that
// refuses the targets a tenant must not reach (loopback, private,
// link-local and metadata addresses, and the like), checked on the
// addresses a name resolves to, every one of them, at each connection (a
// redirect's included), and connects to the address it checked; with a
// timeout and a bound on the response's size.
package httptool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxResponse is the largest response body read, in bytes.
const DefaultMaxResponse = 1 << 20

// MaxRedirects is how many redirects a request follows.
const MaxRedirects = 5

// Client makes the requests of HTTP tools.
type Client struct {
	// Allow names targets let through the address checks, as HOST:PORT
	// (the URL's host and port as written, or an IP address and port):
	// for tests and private deployments whose tools call services on
	// private addresses.
	Allow []string
	// MaxResponse bounds a response body (0: DefaultMaxResponse).
	MaxResponse int64
	// Resolver resolves names (nil: net.DefaultResolver).
	Resolver *net.Resolver
}

// RefusedError is a target refused by the address checks.
type RefusedError struct {
	// Host is the host asked for, Addr the address it resolved to and
	// Reason what that address is.
	Host, Addr, Reason string
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Host == e.Addr {
		return fmt.Sprintf("the target %s is refused: %s addresses cannot be reached from HTTP tools", e.Addr, e.Reason)
	}
	return fmt.Sprintf("the target %s is refused: it resolves to %s, a %s address, which HTTP tools cannot reach", e.Host, e.Addr, e.Reason)
}

// TooLargeError is a response body past the bound.
type TooLargeError struct{ Max int64 }

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the response body is larger than %d bytes, the most an HTTP tool reads", e.Max)
}

// Request is one request of an HTTP tool.
type Request struct {
	Method  string
	URL     string
	Headers map[string]string
	Body    []byte
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	benchmark = netip.MustParsePrefix("198.18.0.0/15")
	ietf      = netip.MustParsePrefix("192.0.0.0/24")
	reserved  = netip.MustParsePrefix("240.0.0.0/4")
	metadata  = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}
)

// Forbidden says why an address may not be reached ("" when it may).
func Forbidden(a netip.Addr) string {
	a = a.Unmap()
	for _, m := range metadata {
		if a == m {
			return "cloud metadata"
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsUnspecified(), thisNet.Contains(a):
		return "unspecified"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(a):
		return "shared (carrier-grade NAT)"
	case benchmark.Contains(a), ietf.Contains(a), reserved.Contains(a):
		return "reserved"
	}
	return ""
}

func (c *Client) allowed(hostport string) bool {
	for _, a := range c.Allow {
		if strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// dial resolves the host, checks every address, and connects to a checked
// one.
func (c *Client) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	res := c.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		addrs = ips
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	if !c.allowed(hostport) {
		for _, a := range addrs {
			if c.allowed(net.JoinHostPort(a.Unmap().String(), port)) {
				continue
			}
			if why := Forbidden(a); why != "" {
				return nil, &RefusedError{Host: host, Addr: a.Unmap().String(), Reason: why}
			}
		}
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, last
}

// Do makes a request within timeout and reads its response (at most
// MaxResponse bytes of body). Redirects are followed (MaxRedirects), each
// target checked again.
func (c *Client) Do(ctx context.Context, r *Request, timeout time.Duration) (*Response, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, fmt.Errorf("the url %q does not parse: %v", r.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("the url %q is not an http:// or https:// URL with a host", r.URL)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tr := &http.Transport{Proxy: nil, DialContext: c.dial, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= MaxRedirects {
			return fmt.Errorf("more than %d redirects", MaxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("a redirect to %q is not http or https", req.URL.Scheme)
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return nil, err
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "toolhost-http-tool")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unwrap(err)
	}
	defer resp.Body.Close()
	max := c.MaxResponse
	if max <= 0 {
		max = DefaultMaxResponse
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, unwrap(err)
	}
	if int64(len(body)) > max {
		return nil, &TooLargeError{Max: max}
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// unwrap takes the url.Error off a refusal, so that it reads as one.
func unwrap(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, ue.URL, ue.Err)
	}
	return err
}
