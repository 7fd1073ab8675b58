package load

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// endpoint is where a connection goes: one per distinct network address.
type endpoint struct {
	network string // "tcp" or "unix"
	addr    string // host:port or socket path
	tls     *tls.Config
}

// request is a prebuilt request: the exact bytes written for each send.
type request struct {
	raw      []byte
	h2       h2Request  // the HTTP/2 form (Options.Protocol "h2")
	h3       *h3Request // the HTTP/3 form (Options.Protocol "h3")
	head     bool
	endpoint int // index into runner.endpoints
	weight   int
}

// ParseTarget parses a target URL: http://host[:port]/path,
// https://host[:port]/path or unix:/path/to.sock[:/request-path].
func parseTarget(raw string) (ep endpoint, host, path string, err error) {
	if rest, ok := strings.CutPrefix(raw, "unix:"); ok {
		sock, reqPath := rest, "/"
		if i := strings.Index(rest, ":/"); i >= 0 {
			sock, reqPath = rest[:i], rest[i+1:]
		}
		if sock == "" {
			return ep, "", "", fmt.Errorf("unix target %q has no socket path (want unix:/path/to.sock:/request-path)", raw)
		}
		return endpoint{network: "unix", addr: sock}, "localhost", reqPath, nil
	}
	if !strings.Contains(raw, "://") {
		return ep, "", "", fmt.Errorf("target %q has no scheme (want http://, https:// or unix:)", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ep, "", "", err
	}
	var port string
	switch u.Scheme {
	case "http":
		port = "80"
	case "https":
		port = "443"
	case "":
		return ep, "", "", fmt.Errorf("target %q has no scheme (want http://, https:// or unix:)", raw)
	default:
		return ep, "", "", fmt.Errorf("target %q: unsupported scheme %q (want http, https or unix)", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return ep, "", "", fmt.Errorf("target %q has no host", raw)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return ep, "", "", fmt.Errorf("target %q: invalid port %q", raw, p)
		}
		port = p
	}
	ep = endpoint{network: "tcp", addr: net.JoinHostPort(u.Hostname(), port)}
	if u.Scheme == "https" {
		ep.tls = &tls.Config{
			ServerName: u.Hostname(),
			// Benchmarks target test servers with self-signed certificates;
			// like wrk, the generator does not verify them.
			InsecureSkipVerify: true, //nolint:gosec
			NextProtos:         []string{"http/1.1"},
		}
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return ep, u.Host, path, nil
}

// buildRequest renders the request bytes of a target.
func buildRequest(t Target, host, path string, closeConn bool) ([]byte, error) {
	method := t.Method
	if method == "" {
		method = "GET"
	}
	for _, c := range method {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return nil, fmt.Errorf("invalid method %q", method)
		}
	}
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(path)
	b.WriteString(" HTTP/1.1\r\n")
	hasHost, hasLength, hasConn := false, false, false
	for _, h := range t.Headers {
		k, v := strings.TrimSpace(h[0]), strings.TrimSpace(h[1])
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, fmt.Errorf("invalid header name %q", h[0])
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("header %q: value contains a line break", k)
		}
		switch strings.ToLower(k) {
		case "host":
			hasHost = true
		case "content-length":
			hasLength = true
		case "connection":
			hasConn = true
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	if !hasHost {
		b.WriteString("Host: ")
		b.WriteString(host)
		b.WriteString("\r\n")
	}
	if !hasLength && (len(t.Body) > 0 || method == "POST" || method == "PUT" || method == "PATCH") {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(len(t.Body)))
		b.WriteString("\r\n")
	}
	if closeConn && !hasConn {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(t.Body)
	return []byte(b.String()), nil
}

// isCloseHeader reports whether a header asks for a new connection per
// request (the wrk idiom -H 'Connection: close').
func isCloseHeader(h [2]string) bool {
	return strings.EqualFold(strings.TrimSpace(h[0]), "connection") &&
		strings.EqualFold(strings.TrimSpace(h[1]), "close")
}

// ParseWeightedURL splits the CLI form URL@weight (e.g.
// http://127.0.0.1:8080/a@3) into the URL and its weight (1 when absent).
func ParseWeightedURL(s string) (string, int, error) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 || strings.ContainsAny(s[i+1:], "/:") {
		return s, 1, nil
	}
	w, err := strconv.Atoi(s[i+1:])
	if err != nil || w <= 0 {
		return "", 0, fmt.Errorf("target %q: weight after @ must be a positive integer", s)
	}
	return s[:i], w, nil
}

// withUserinfoAuth adds "Authorization: Basic …" for the user-info of the
// target URL (http://user:password@host/), as curl and browsers do, unless
// the target sets an Authorization header itself.
func withUserinfoAuth(t Target) Target {
	if !strings.Contains(t.URL, "@") {
		return t
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.User == nil {
		return t
	}
	for _, h := range t.Headers {
		if strings.EqualFold(strings.TrimSpace(h[0]), "authorization") {
			return t
		}
	}
	pass, _ := u.User.Password()
	cred := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
	t.Headers = append(append([][2]string(nil), t.Headers...), [2]string{"Authorization", "Basic " + cred})
	return t
}

// redactURL hides the user-info of a URL ("http://(sensitive)@host/"),
// for summaries and results.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	at := strings.Index(s, "@")
	scheme := strings.Index(s, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return s
	}
	return s[:scheme+3] + "(sensitive)" + s[at:]
}

// RedactURL hides the user-info of a target URL for messages
// ("http://(sensitive)@host/").
func RedactURL(s string) string { return redactURL(s) }
