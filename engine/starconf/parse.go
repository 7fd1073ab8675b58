package starconf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// DefaultMaxSteps bounds the execution of a pipeline file (and of the files
// it loads) when Options.MaxSteps is zero. Building a pipeline is a few
// thousand steps; a sweep over thousands of values stays far below.
const DefaultMaxSteps = 10_000_000

// maxLoadDepth bounds nested load() calls.
const maxLoadDepth = 32

// FileOptions are the Starlark dialect options of pipeline files: set(),
// while loops and top-level if/for/while are allowed (sweeps are written as
// loops), top-level names may be reassigned, recursion is not allowed.
var FileOptions = syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
}

// Options tune ParseContext.
type Options struct {
	// MaxSteps bounds execution (DefaultMaxSteps when zero).
	MaxSteps uint64
	// MaxAlloc is the allocation budget in bytes (MaxAlloc when zero).
	MaxAlloc int64
	// Print receives the output of print() (os.Stderr when nil).
	Print io.Writer
}

// ParseFile runs and decodes a .star pipeline file from the OS file system.
// load() may read files under the file's folder only.
func ParseFile(filename string) (*pipeline.Pipeline, hcl.Diagnostics) {
	return Parse(pipeline.DirFS(filepath.Dir(filename)), filename, filepath.Base(filename))
}

// Parse runs the pipeline file name (relative to fsys, the pipeline's
// folder) whose display name in diagnostics is display.
func Parse(fsys fs.FS, display, name string) (*pipeline.Pipeline, hcl.Diagnostics) {
	return ParseContext(context.Background(), fsys, display, name, Options{})
}

// ParseSource runs pipeline source bytes; fsys is the pipeline's folder.
func ParseSource(fsys fs.FS, display string, src []byte) (*pipeline.Pipeline, hcl.Diagnostics) {
	return parse(context.Background(), fsys, display, path.Base(display), src, Options{})
}

// ParseContext is Parse with a context (cancelling it stops execution) and
// options. It never panics, whatever the bytes.
func ParseContext(ctx context.Context, fsys fs.FS, display, name string, opts Options) (*pipeline.Pipeline, hcl.Diagnostics) {
	src, err := pipeline.ReadFile(fsys, name)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read pipeline file",
			Detail:   fmt.Sprintf("Reading %s: %s.", display, err),
			Subject:  &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	return parse(ctx, fsys, display, name, src, opts)
}

// loadError is a load() call that names a file outside the pipeline's folder.
type loadError struct{ msg string }

func (e *loadError) Error() string { return e.msg }

// module is a loaded file: its globals once executed, or the error.
type module struct {
	globals starlark.StringDict
	err     error
	running bool
}

func parse(ctx context.Context, fsys fs.FS, display, name string, src []byte, opts Options) (p *pipeline.Pipeline, diags hcl.Diagnostics) {
	start := &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos}
	defer func() {
		if r := recover(); r != nil {
			p = nil
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Internal error while running the pipeline",
				Detail:   fmt.Sprintf("benchflow could not run this file (%v). Please report it with the file attached.", r),
				Subject:  start,
			})
		}
	}()
	b := &builder{
		p:       pipeline.New(display, fsys, src, "star"),
		seen:    map[string]hcl.Range{},
		sources: map[string]*source{},
	}
	maxSteps := opts.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	out := opts.Print
	if out == nil {
		out = os.Stderr
	}
	predeclared := b.predeclared()
	bg := &budget{max: opts.MaxAlloc}
	if bg.max <= 0 {
		bg.max = MaxAlloc
	}
	for k, v := range bg.builtins() {
		predeclared[k] = v
	}
	modules := map[string]*module{}
	displayDir := path.Dir(filepath.ToSlash(display))

	thread := &starlark.Thread{
		Name: display,
		Print: func(th *starlark.Thread, msg string) {
			pos := th.CallFrame(1).Pos
			fmt.Fprintf(out, "%s:%d,%d: %s\n", pos.Filename(), pos.Line, pos.Col, msg)
		},
	}
	thread.SetMaxExecutionSteps(maxSteps)

	// exec runs one file on the shared thread (so the step bound covers
	// loaded files too).
	var exec func(fsName, shown string, src []byte) (starlark.StringDict, error)
	exec = func(fsName, shown string, src []byte) (starlark.StringDict, error) {
		b.sources[shown] = newSource(shown, src, nil)
		if err := checkSource(shown, src); err != nil {
			return nil, err
		}
		f, err := FileOptions.Parse(shown, renameLoadAttr(src), 0)
		if err != nil {
			return nil, err
		}
		b.sources[shown] = newSource(shown, src, f)
		rewriteAlloc(f)
		prog, err := starlark.FileProgram(f, predeclared.Has)
		if err != nil {
			return nil, err
		}
		return prog.Init(thread, predeclared)
	}
	thread.Load = func(th *starlark.Thread, modName string) (starlark.StringDict, error) {
		from := path.Dir(strings.TrimPrefix(th.CallFrame(0).Pos.Filename(), displayDir+"/"))
		fsName, err := loadPath(fsys, from, modName)
		if err != nil {
			return nil, err
		}
		if m, ok := modules[fsName]; ok {
			if m.running {
				return nil, fmt.Errorf("cycle in load graph: %s loads itself", modName)
			}
			return m.globals, m.err
		}
		if len(modules) >= maxLoadDepth*8 || th.CallStackDepth() > maxLoadDepth*4 {
			return nil, fmt.Errorf("too many nested load() calls")
		}
		src, err := pipeline.ReadFile(fsys, fsName)
		if errors.Is(err, pipeline.ErrOutside) {
			return nil, &loadError{msg: fmt.Sprintf("load(%q): %v; load() reads only .star files inside the pipeline's folder", modName, err)}
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", modName, err)
		}
		m := &module{running: true}
		modules[fsName] = m
		b.p.Loaded = append(b.p.Loaded, pipeline.LoadedFile{Path: fsName, Source: src})
		m.globals, m.err = exec(fsName, path.Join(displayDir, fsName), src)
		m.running = false
		return m.globals, m.err
	}
	if displayDir == "." {
		// Loaded files are shown relative to the working directory, like
		// the pipeline file itself.
		displayDir = ""
	}
	modules[name] = &module{running: true}

	if err := ctx.Err(); err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Pipeline evaluation cancelled",
			Detail: fmt.Sprintf("Running %s was cancelled: %s.", display, err), Subject: start}}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			thread.Cancel(ctx.Err().Error())
		case <-done:
		}
	}()

	if _, err := exec(name, display, src); err != nil {
		b.diags = append(b.diags, b.errDiags(err, start)...)
		return b.p, b.diags
	}
	if !b.gotPipeline {
		b.errorf(*start, "Missing pipeline block",
			`A pipeline file needs one call like pipeline("name", description = "…").`)
	}
	if len(b.p.Steps) == 0 && b.gotPipeline {
		b.diags = append(b.diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "No steps",
			Detail:   "The pipeline declares no steps, so trials only provision and tear down services.",
			Subject:  b.p.DeclRange.Ptr(),
		})
	}
	return b.p, b.diags
}

// loadPath checks a load() module name and returns its path in fsys.
// Modules are .star files named relative to the loading file, inside the
// pipeline's folder (a symbolic link may point only inside it).
func loadPath(fsys fs.FS, from, modName string) (string, error) {
	bad := func(why string) error {
		return &loadError{msg: fmt.Sprintf("load(%q): %s; load() reads only .star files inside the pipeline's folder", modName, why)}
	}
	switch {
	case modName == "":
		return "", bad("empty path")
	case strings.HasPrefix(modName, "/") || filepath.IsAbs(modName) || strings.Contains(modName, "\\") || strings.Contains(modName, ":"):
		return "", bad("absolute paths are not allowed")
	case !strings.HasSuffix(modName, ".star"):
		return "", bad("not a .star file")
	}
	for _, el := range strings.Split(modName, "/") {
		if el == ".." {
			return "", bad("\"..\" is not allowed")
		}
	}
	full := path.Join(from, modName)
	if !fs.ValidPath(full) {
		return "", bad("invalid path")
	}
	// Symbolic links are followed where they stay inside the folder, as
	// for file() and templatefile(): the OS file system
	// (pipeline.DirFS) resolves them itself; on a file system that can
	// read links (fs.ReadLinkFS), each link on the path is resolved here.
	parts := strings.Split(full, "/")
	links := 0
	for i := 0; i < len(parts); i++ {
		prefix := strings.Join(parts[:i+1], "/")
		fi, err := fs.Lstat(fsys, prefix)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue // missing or plain: ReadFile decides
		}
		target, err := fs.ReadLink(fsys, prefix)
		if err != nil {
			return "", bad(fmt.Sprintf("%s is a symbolic link that cannot be read", prefix))
		}
		resolved := path.Join(path.Dir(prefix), target)
		if path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
			return "", bad(fmt.Sprintf("%s is a symbolic link that leaves the pipeline's folder", prefix))
		}
		if links++; links > 40 { // as Linux: ELOOP
			return "", bad("too many levels of symbolic links")
		}
		parts = append(strings.Split(resolved, "/"), parts[i+1:]...)
		i = -1 // walk the resolved path again
		full = strings.Join(parts, "/")
	}
	return full, nil
}

// errDiags turns a Starlark error into located diagnostics.
func (b *builder) errDiags(err error, start *hcl.Range) hcl.Diagnostics {
	var lim *limitError
	if errors.As(err, &lim) {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: lim.summary, Detail: lim.msg + ".", Subject: b.posRange(lim.pos, start)}}
	}
	var serr syntax.Error
	if errors.As(err, &serr) {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Starlark syntax error",
			Detail: serr.Msg + ".", Subject: b.posRange(serr.Pos, start)}}
	}
	var rerrs resolve.ErrorList
	if errors.As(err, &rerrs) {
		var diags hcl.Diagnostics
		for _, re := range rerrs {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Starlark name error",
				Detail: re.Msg + ".", Subject: b.posRange(re.Pos, start)})
		}
		return diags
	}
	// The innermost evaluation error locates a failure in a loaded file.
	var ee *starlark.EvalError
	for cur := err; cur != nil; {
		var e *starlark.EvalError
		if !errors.As(cur, &e) {
			break
		}
		ee = e
		cur = e.Unwrap()
	}
	if ee == nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Starlark error", Detail: err.Error() + ".", Subject: start}}
	}
	subject := start
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		if ee.CallStack[i].Pos.IsValid() && ee.CallStack[i].Pos.Line > 0 {
			subject = b.posRange(ee.CallStack[i].Pos, start)
			break
		}
	}
	summary := "Starlark runtime error"
	var lerr *loadError
	switch {
	case errors.As(err, &lerr):
		summary = "Forbidden load() path"
	case strings.Contains(ee.Msg, "too many steps"), strings.Contains(ee.Msg, "within the step limit"):
		summary = "Execution step limit exceeded"
	case strings.Contains(ee.Msg, "memory budget exceeded"):
		summary = "Memory budget exceeded"
	case strings.Contains(ee.Msg, "Starlark computation cancelled"):
		summary = "Pipeline evaluation cancelled"
	}
	// The backtrace ends with the error message.
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary,
		Detail: ee.Backtrace(), Subject: subject}}
}

func (b *builder) posRange(p syntax.Position, def *hcl.Range) *hcl.Range {
	if !p.IsValid() {
		return def
	}
	src := b.sources[p.Filename()]
	if src == nil {
		src = newSource(p.Filename(), nil, nil)
	}
	r := src.rng(p, p)
	return &r
}
