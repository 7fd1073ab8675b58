// Package apisix is a small client for the Apache APISIX Admin API (v3):
// upstreams and routes, authenticated with the X-API-KEY header.
//
// Entry points: New builds a Client; PutUpstream, PutRoute, Get, Delete,
// DeleteForce and List manage objects; WaitRoute polls the proxy until a
// route answers; Discovered and WaitDiscovered read the control API's
// Consul discovery dump; Version reads APISIX's version from the admin
// API's Server header.
// The admin key is held by the client and never appears in an error.
//
// Sibling packages: providers/nomad (the provider that uses this client),
// providers/nomad/consul (service health), providers/nomad/fake (httptest
// fakes of Nomad, Consul and APISIX).
package apisix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of admin objects this client manages.
const (
	KindUpstreams = "upstreams"
	KindRoutes    = "routes"
)

// ErrNotFound is returned (wrapped) when the admin API answers 404.
var ErrNotFound = errors.New("apisix: key not found")

// ErrUnauthorized is returned (wrapped) when the admin API rejects the key.
var ErrUnauthorized = errors.New("apisix: admin key rejected")

// ErrInUse is returned (wrapped) when APISIX refuses to delete an object
// another one still refers to (400 "… is still using it now"). Right
// after the referring route is deleted this can be a stale cache: see
// DeleteForce.
var ErrInUse = errors.New("apisix: object still in use")

// Upstream is the subset of an APISIX upstream object benchflow writes.
type Upstream struct {
	ID            string            `json:"id,omitempty"`
	Name          string            `json:"name,omitempty"`
	Type          string            `json:"type,omitempty"` // "roundrobin"
	Nodes         []Node            `json:"nodes,omitempty"`
	ServiceName   string            `json:"service_name,omitempty"`
	DiscoveryType string            `json:"discovery_type,omitempty"` // "consul"
	Scheme        string            `json:"scheme,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
}

// Node is one explicit upstream node.
type Node struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Weight int    `json:"weight"`
}

// Route is the subset of an APISIX route object benchflow writes.
type Route struct {
	ID         string            `json:"id,omitempty"`
	Name       string            `json:"name,omitempty"`
	URI        string            `json:"uri,omitempty"`
	Methods    []string          `json:"methods,omitempty"`
	UpstreamID string            `json:"upstream_id,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// Item is one admin object as returned in the v3 envelope:
// {"key": "/apisix/routes/1", "value": {…}}.
type Item struct {
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value"`
	CreatedIndex  uint64          `json:"createdIndex,omitempty"`
	ModifiedIndex uint64          `json:"modifiedIndex,omitempty"`
}

// Labels decodes the labels of an item's value.
func (it Item) Labels() map[string]string {
	var v struct {
		Labels map[string]string `json:"labels"`
	}
	_ = json.Unmarshal(it.Value, &v)
	return v.Labels
}

// ID is the last element of the item's key.
func (it Item) ID() string {
	if i := strings.LastIndexByte(it.Key, '/'); i >= 0 {
		return it.Key[i+1:]
	}
	return it.Key
}

// Client talks to one APISIX admin endpoint.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client for the admin API at base (e.g.
// "http://127.0.0.1:9180"). key is sent as X-API-KEY and never printed.
func New(base, key string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("parsing APISIX admin URL %q: want http(s)://host:port", base)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimRight(base, "/"), key: key, http: hc}, nil
}

// String describes the client without its key.
func (c *Client) String() string { return "apisix admin " + c.base }

var idRE = regexp.MustCompile(`^[a-zA-Z0-9-_.]{1,64}$`)

// ValidID reports whether id is accepted by APISIX as an object id.
func ValidID(id string) bool { return idRE.MatchString(id) }

// PutUpstream creates or replaces the upstream u.ID.
func (c *Client) PutUpstream(ctx context.Context, u *Upstream) error {
	return c.put(ctx, KindUpstreams, u.ID, u)
}

// PutRoute creates or replaces the route r.ID.
func (c *Client) PutRoute(ctx context.Context, r *Route) error {
	return c.put(ctx, KindRoutes, r.ID, r)
}

func (c *Client) put(ctx context.Context, kind, id string, v any) error {
	if !ValidID(id) {
		return fmt.Errorf("putting %s %q: invalid id", singular(kind), id)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s %q: %w", singular(kind), id, err)
	}
	if _, err := c.do(ctx, http.MethodPut, kind+"/"+id, body); err != nil {
		return fmt.Errorf("putting %s %q: %w", singular(kind), id, err)
	}
	return nil
}

// Get returns one object; the error wraps ErrNotFound when it does not exist.
func (c *Client) Get(ctx context.Context, kind, id string) (*Item, error) {
	b, err := c.do(ctx, http.MethodGet, kind+"/"+id, nil)
	if err != nil {
		return nil, fmt.Errorf("getting %s %q: %w", singular(kind), id, err)
	}
	var it Item
	if err := json.Unmarshal(b, &it); err != nil {
		return nil, fmt.Errorf("decoding %s %q: %w", singular(kind), id, err)
	}
	return &it, nil
}

// Delete removes one object; the error wraps ErrNotFound when it does not
// exist.
func (c *Client) Delete(ctx context.Context, kind, id string) error {
	if _, err := c.do(ctx, http.MethodDelete, kind+"/"+id, nil); err != nil {
		return fmt.Errorf("deleting %s %q: %w", singular(kind), id, err)
	}
	return nil
}

// DeleteForce removes one object with ?force=true, which skips APISIX's
// "still in use" check (APISIX 3.x).
func (c *Client) DeleteForce(ctx context.Context, kind, id string) error {
	if _, err := c.do(ctx, http.MethodDelete, kind+"/"+id+"?force=true", nil); err != nil {
		return fmt.Errorf("deleting %s %q with force: %w", singular(kind), id, err)
	}
	return nil
}

// List returns every object of a kind.
func (c *Client) List(ctx context.Context, kind string) ([]Item, error) {
	b, err := c.do(ctx, http.MethodGet, kind, nil)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", kind, err)
	}
	var l struct {
		Total int    `json:"total"`
		List  []Item `json:"list"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("decoding %s list: %w", kind, err)
	}
	return l.List, nil
}

// singular names one object of a kind: "routes" → "route".
func singular(kind string) string { return strings.TrimSuffix(kind, "s") }

func (c *Client) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/apisix/admin/"+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-KEY", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// *url.Error quotes the URL only; the key is in a header.
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return b, nil
	}
	msg := errorMessage(b)
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w (404 %s)", ErrNotFound, msg)
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("%w (401 %s)", ErrUnauthorized, msg)
	case http.StatusBadRequest:
		if strings.Contains(msg, "is still using it") {
			return nil, fmt.Errorf("%w (400 %s)", ErrInUse, msg)
		}
	}
	return nil, fmt.Errorf("admin API answered %d: %s", resp.StatusCode, msg)
}

// errorMessage extracts error_msg (with its description, where an APISIX
// version gives one) or message from an APISIX error body, or the title
// of nginx's own HTML page (APISIX 3.9.1's gateway answers a route whose
// upstream has no node yet with nginx's "503 Service Temporarily
// Unavailable" page).
func errorMessage(b []byte) string {
	var e struct {
		ErrorMsg    string `json:"error_msg"`
		Description string `json:"description"`
		Message     string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		if e.ErrorMsg != "" && e.Description != "" {
			return e.ErrorMsg + ": " + e.Description
		}
		if e.ErrorMsg != "" {
			return e.ErrorMsg
		}
		if e.Message != "" {
			return e.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if _, rest, ok := strings.Cut(s, "<title>"); ok && strings.HasPrefix(s, "<") {
		if title, _, ok := strings.Cut(rest, "</title>"); ok {
			return strings.TrimSpace(title)
		}
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// WaitRoute polls url (a URL through the gateway) until it answers with a
// status below 400, every interval, until ctx ends. The error quotes the
// last status and body when the route never answered.
func WaitRoute(ctx context.Context, hc *http.Client, target string, interval time.Duration) error {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("probing %s: %w", target, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode < 400 {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorMessage(b))
		} else if ctx.Err() == nil {
			last = err.Error()
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == "" {
				last = "no answer"
			}
			return fmt.Errorf("waiting for the gateway to answer %s (last answer %s): %w", target, last, ctx.Err())
		case <-t.C:
		}
	}
}

// DumpPath is the control API endpoint that lists what APISIX's Consul
// discovery holds, per service (the control API listens on
// 127.0.0.1:9090 by default).
const DumpPath = "/v1/discovery/consul/dump"

// Discovered returns the nodes ("host:port", sorted) that APISIX's Consul
// discovery holds for service, read from the control API at control
// (e.g. "http://127.0.0.1:9090").
func Discovered(ctx context.Context, hc *http.Client, control, service string) ([]string, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	u := strings.TrimRight(control, "/") + DumpPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("reading APISIX's discovery dump: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading APISIX's discovery dump: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("reading APISIX's discovery dump: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading APISIX's discovery dump: GET %s answered %d: %s", u, resp.StatusCode, errorMessage(b))
	}
	var dump struct {
		Services map[string][]struct {
			Host string `json:"host"`
			Port int    `json:"port"`
		} `json:"services"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		return nil, fmt.Errorf("decoding APISIX's discovery dump from %s: %w", u, err)
	}
	var out []string
	for _, n := range dump.Services[service] {
		out = append(out, net.JoinHostPort(n.Host, strconv.Itoa(n.Port)))
	}
	sort.Strings(out)
	return out, nil
}

// ErrNoneDiscovered is wrapped by WaitDiscovered's error when the dump
// answered but never held any node of the service (Consul discovery not
// configured, pointing at another Consul, or backing off after Consul was
// unreachable).
var ErrNoneDiscovered = errors.New("APISIX's Consul discovery holds no instance of it")

// WaitDiscovered polls the control API every interval until APISIX's
// Consul discovery holds exactly the nodes want (host:port) for service —
// no fewer, so the load spreads over every instance, and no stale node of
// an earlier trial. The error names what APISIX held last.
func WaitDiscovered(ctx context.Context, hc *http.Client, control, service string, want []string, interval time.Duration) error {
	want = slices.Sorted(slices.Values(want))
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	var last []string
	var lastErr error
	for {
		got, err := Discovered(ctx, hc, control, service)
		if err == nil && slices.Equal(got, want) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			lastErr = err
		} else if err == nil {
			last, lastErr = got, nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if lastErr != nil {
				return fmt.Errorf("waiting for APISIX to discover the %d instances of %q: %w (%w)", len(want), service, lastErr, ctx.Err())
			}
			if len(last) == 0 {
				return fmt.Errorf("waiting for APISIX to discover the %d instances of %q (%s): %w: %w",
					len(want), service, strings.Join(want, ", "), ErrNoneDiscovered, ctx.Err())
			}
			return fmt.Errorf("waiting for APISIX to discover the %d instances of %q (%s): its Consul discovery holds %d (%s): %w",
				len(want), service, strings.Join(want, ", "), len(last), strings.Join(last, ", "), ctx.Err())
		case <-t.C:
		}
	}
}

// Version asks the admin API for APISIX's version: the "APISIX/3.9.1"
// Server header APISIX puts on every admin answer (apisix/init.lua,
// http_admin), read from a list of at most 10 routes. It is "" when the
// header carries no version (enable_server_tokens: false) or is not
// APISIX's.
func (c *Client) Version(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/apisix/admin/routes?page=1&page_size=10", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-KEY", c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return ServerVersion(resp.Header.Get("Server")), nil
}

// ServerVersion is the version in an APISIX Server header: "APISIX/3.9.1"
// → "3.9.1"; "" for "APISIX" alone or another server's header.
func ServerVersion(server string) string {
	v, ok := strings.CutPrefix(strings.TrimSpace(server), "APISIX/")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}
