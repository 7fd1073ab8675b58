package run

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// waitHealthy polls the deployment's endpoint until the health check passes,
// the deployment dies (Liveness), or the timeout passes.
func waitHealthy(ctx context.Context, dep providers.Deployment, h providers.Health) error {
	if !h.TCP && h.HTTPPath == "" {
		if l, ok := dep.(providers.Liveness); ok {
			return l.Alive(ctx)
		}
		return nil
	}
	ep := dep.Endpoint()
	port := ep.Port
	if p, ok := ep.Ports[h.PortName]; ok && h.PortName != "" {
		port = p
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	deadline := time.Now().Add(h.Timeout)
	client := &http.Client{Timeout: 2 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	defer client.CloseIdleConnections()
	var last error
	for {
		if l, ok := dep.(providers.Liveness); ok {
			if err := l.Alive(ctx); err != nil {
				return err
			}
		}
		if h.HTTPPath != "" {
			scheme := ep.Scheme
			if scheme == "" {
				scheme = "http"
			}
			url := fmt.Sprintf("%s://%s%s", scheme, addr, h.HTTPPath)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if hh := ep.Attrs["host_header"]; hh != "" {
				req.Host = hh // e.g. an ingress routed by name
			}
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				ok := resp.StatusCode >= 200 && resp.StatusCode < 400
				if h.Status != 0 {
					ok = resp.StatusCode == h.Status
				}
				if ok {
					return nil
				}
				last = fmt.Errorf("GET %s answered %d", url, resp.StatusCode)
			} else {
				last = fmt.Errorf("GET %s: %w", url, err)
			}
		} else {
			d := net.Dialer{Timeout: time.Second}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				return nil
			}
			last = fmt.Errorf("connecting to %s: %w", addr, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("health check timed out after %s: %w", h.Timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(h.Interval):
		}
	}
}
