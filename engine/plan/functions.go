package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/userfile"
)

// Functions returns the functions available in pipeline expressions: HCL's
// standard library plus file(), fileexists() and templatefile(), which read
// relative to the pipeline's folder (fsys).
func Functions(fsys fs.FS) map[string]function.Function { return functions(fsys, nil) }

// functions is Functions counted by b (when not nil): templatefile()'s
// templates are instrumented like the pipeline's expressions.
func functions(fsys fs.FS, b *evalBudget) map[string]function.Function {
	fns := map[string]function.Function{
		"abs":          stdlib.AbsoluteFunc,
		"ceil":         stdlib.CeilFunc,
		"chomp":        stdlib.ChompFunc,
		"chunklist":    stdlib.ChunklistFunc,
		"coalesce":     stdlib.CoalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc,
		"compact":      stdlib.CompactFunc,
		"concat":       stdlib.ConcatFunc,
		"contains":     stdlib.ContainsFunc,
		"csvdecode":    stdlib.CSVDecodeFunc,
		"distinct":     stdlib.DistinctFunc,
		"element":      stdlib.ElementFunc,
		"flatten":      stdlib.FlattenFunc,
		"floor":        stdlib.FloorFunc,
		"format":       stdlib.FormatFunc,
		"formatdate":   stdlib.FormatDateFunc,
		"formatlist":   stdlib.FormatListFunc,
		"indent":       stdlib.IndentFunc,
		"join":         stdlib.JoinFunc,
		"jsondecode":   stdlib.JSONDecodeFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"keys":         stdlib.KeysFunc,
		"length":       stdlib.LengthFunc,
		"log":          stdlib.LogFunc,
		"lookup":       stdlib.LookupFunc,
		"lower":        stdlib.LowerFunc,
		"max":          stdlib.MaxFunc,
		"merge":        stdlib.MergeFunc,
		"min":          stdlib.MinFunc,
		"parseint":     stdlib.ParseIntFunc,
		"pow":          stdlib.PowFunc,
		"range":        stdlib.RangeFunc,
		"regex":        stdlib.RegexFunc,
		"regexall":     stdlib.RegexAllFunc,
		"replace":      stdlib.ReplaceFunc,
		"reverse":      stdlib.ReverseListFunc,
		"setproduct":   stdlib.SetProductFunc,
		"slice":        stdlib.SliceFunc,
		"sort":         stdlib.SortFunc,
		"split":        stdlib.SplitFunc,
		"strrev":       stdlib.ReverseFunc,
		"substr":       stdlib.SubstrFunc,
		"timeadd":      stdlib.TimeAddFunc,
		"title":        stdlib.TitleFunc,
		"tostring":     stdlib.MakeToFunc(cty.String),
		"tonumber":     stdlib.MakeToFunc(cty.Number),
		"tobool":       stdlib.MakeToFunc(cty.Bool),
		"tolist":       stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":        stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"trim":         stdlib.TrimFunc,
		"trimprefix":   stdlib.TrimPrefixFunc,
		"trimspace":    stdlib.TrimSpaceFunc,
		"trimsuffix":   stdlib.TrimSuffixFunc,
		"upper":        stdlib.UpperFunc,
		"values":       stdlib.ValuesFunc,
		"zipmap":       stdlib.ZipmapFunc,
		"try":          tryfunc.TryFunc,
		"can":          tryfunc.CanFunc,
	}
	fns["file"] = fileFunc(fsys)
	fns["fileexists"] = fileExistsFunc(fsys)
	fns["templatefile"] = templateFileFunc(fsys, fns, b)
	if b != nil {
		budgetFunctions(fns, b)
	}
	return fns
}

// cleanRel turns a pipeline-relative path into an fs.FS path, refusing to
// leave the pipeline's folder.
func cleanRel(p string) (string, error) {
	if path.IsAbs(p) {
		return "", fmt.Errorf("path %q must be relative to the pipeline's folder", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leaves the pipeline's folder", p)
	}
	return c, nil
}

func readFile(fsys fs.FS, p string) ([]byte, error) {
	if fsys == nil {
		return nil, fmt.Errorf("no file system to read %q from", p)
	}
	c, err := cleanRel(p)
	if err != nil {
		return nil, err
	}
	return pipeline.ReadFile(fsys, c)
}

// statFile checks that a pipeline-relative path names a file.
func statFile(fsys fs.FS, p string) error {
	if fsys == nil {
		return fmt.Errorf("no file system to read %q from", p)
	}
	c, err := cleanRel(p)
	if err != nil {
		return err
	}
	fi, err := fs.Stat(fsys, c)
	if err != nil {
		return err
	}
	return userfile.Check(p, fi, pipeline.MaxFileSize)
}

func fileFunc(fsys fs.FS) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := readFile(fsys, args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text; use a file block with source = … for binary files", args[0].AsString())
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileExistsFunc(fsys fs.FS) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			c, err := cleanRel(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			_, err = fs.Stat(fsys, c)
			if errors.Is(err, pipeline.ErrOutside) {
				return cty.NilVal, err // not "false": the file exists, out of bounds
			}
			return cty.BoolVal(err == nil), nil
		},
	})
}

func templateFileFunc(fsys fs.FS, fns map[string]function.Function, budget *evalBudget) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "vars", Type: cty.DynamicPseudoType},
		},
		Type: function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			b, err := readFile(fsys, name)
			if err != nil {
				return cty.NilVal, err
			}
			vars := args[1]
			if !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
				return cty.NilVal, fmt.Errorf("the vars argument must be an object or a map")
			}
			// The call's own diagnostic is withheld when its arguments are
			// sensitive (the vars, the path): the template's are in its text.
			return renderTemplate(name, string(b), vars.AsValueMap(), fns, budget, nil)
		},
	})
}

// RenderTemplate renders template text with the given variables (each a
// top-level name in the template) and functions.
func RenderTemplate(name, text string, vars map[string]cty.Value, fns map[string]function.Function) (cty.Value, error) {
	return renderTemplate(name, text, vars, fns, nil, nil)
}

// renderTemplate is RenderTemplate counted by b (when not nil), with the
// diagnostics of its evaluation passed through hide (when not nil: a
// rendered file's, whose template may use sensitive values).
func renderTemplate(name, text string, vars map[string]cty.Value, fns map[string]function.Function, b *evalBudget,
	hide func(hclsyntax.Expression, hcl.Diagnostics) hcl.Diagnostics) (cty.Value, error) {
	if d := pipeline.CheckTemplateNesting(name, []byte(text), hcl.InitialPos); d.HasErrors() {
		return cty.NilVal, diag.Err(d)
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(text), name, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, diag.Err(diags)
	}
	if b != nil {
		instrument(expr, b)
		expr = counted(expr, b)
	}
	ctx := &hcl.EvalContext{Variables: vars, Functions: fns}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		if hide != nil {
			diags = hide(expr, diags)
		}
		return cty.NilVal, diag.Err(diags)
	}
	if v.IsNull() || !v.IsKnown() {
		return cty.StringVal(""), nil
	}
	if v.Type() != cty.String {
		return cty.NilVal, fmt.Errorf("template %s produced a %s, not text", name, v.Type().FriendlyName())
	}
	return v, nil
}
