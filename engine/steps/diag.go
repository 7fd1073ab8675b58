package steps

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// AttrRange returns the range of an attribute's value, or of the body.
func AttrRange(body hcl.Body, name string) *hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			return a.Expr.Range().Ptr()
		}
		return sb.SrcRange.Ptr()
	}
	return nil
}

// AttrErr is an error diagnostic at an attribute's value (see AttrRange).
func AttrErr(body hcl.Body, name, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: AttrRange(body, name)}
}

// CheckDuration reports an attribute holding no duration, or nil.
func CheckDuration(body hcl.Body, name, v string) *hcl.Diagnostic {
	if v == "" {
		return nil
	}
	if _, err := pipeline.ParseDuration(v); err != nil {
		return invalidDuration(body, name, err)
	}
	return nil
}

// invalidDuration is CheckDuration's diagnostic for the parse error err.
func invalidDuration(body hcl.Body, name string, err error) *hcl.Diagnostic {
	return AttrErr(body, name, "Invalid duration", err.Error()+".")
}

// CheckURL reports an attribute holding no http(s) or unix: URL, or nil. A
// URL with a placeholder is known only once services run and passes.
func CheckURL(body hcl.Body, name, v string) *hcl.Diagnostic {
	if v == "" || strings.Contains(v, "${") {
		return nil // placeholder: known after provisioning
	}
	if strings.HasPrefix(v, "unix:") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return AttrErr(body, name, "Invalid URL", fmt.Sprintf("%q is not an http:// or https:// URL (or unix:/path.sock:/path).", v))
	}
	return nil
}

// diagList collects diagnostics, skipping nil ones.
type diagList hcl.Diagnostics

func (l *diagList) add(ds ...*hcl.Diagnostic) {
	for _, d := range ds {
		if d != nil {
			*l = append(*l, d)
		}
	}
}
