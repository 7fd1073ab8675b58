package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/benchflow/benchflow/engine/bundle"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/userfile"
)

// updateMarkdown regenerates (or, with check, compares) the benchflow
// sections of each file (report --update).
func updateMarkdown(w io.Writer, files []string, check bool) error {
	stale := 0
	for _, file := range files {
		src, err := userfile.Read(file, userfile.MaxSize)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("--update %w", err)}
		}
		base := filepath.Dir(file)
		out, changed, err := bundle.UpdateMarkdown(file, src, func(sec bundle.Section) (string, error) {
			return renderSection(base, sec)
		})
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		for _, sec := range changed {
			verb := "updated"
			if check {
				verb = "differs from its bundle"
			}
			fmt.Fprintf(w, "%s:%d: benchflow:%s %s %s\n", file, sec.Line, sec.Kind, sec.Path, verb)
		}
		stale += len(changed)
		if check || len(changed) == 0 {
			continue
		}
		if err := scratch.Machine().WriteFile(file, 0o644, func(f *os.File) error {
			_, err := f.Write(out)
			return err
		}); err != nil {
			return &exitError{code: 1, err: err}
		}
	}
	if check && stale > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d section(s) differ from their bundles: run benchflow report --update FILE", stale)}
	}
	return nil
}

// renderSection is one section's content: the bundle's markdown report,
// or its reproduction verdict, after checking the bundle's checksums.
func renderSection(base string, sec bundle.Section) (string, error) {
	dir := filepath.Join(base, filepath.FromSlash(sec.Path))
	if _, err := bundle.Verify(dir); err != nil {
		return "", err
	}
	switch sec.Kind {
	case "verdict":
		if len(sec.Args) > 0 {
			return "", fmt.Errorf("benchflow:verdict takes only the bundle, not %q", sec.Args)
		}
		b, err := userfile.Read(filepath.Join(dir, "reproduction.md"), userfile.MaxSize)
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s has no reproduction.md (publish a run of benchflow reproduce)", sec.Path)
		}
		return string(b), err
	}
	var opts report.Options
	for i := 0; i < len(sec.Args); i++ {
		switch a := sec.Args[i]; {
		case a == "--baseline" && i+1 < len(sec.Args):
			opts.Baseline = sec.Args[i+1]
			i++
		default:
			return "", fmt.Errorf("benchflow:report: unknown argument %q (want --baseline axis=value)", a)
		}
	}
	run, err := results.ReadRun(dir)
	if err != nil {
		return "", err
	}
	s, err := report.Summarize(run, opts)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := s.Write(&b, "markdown"); err != nil {
		return "", err
	}
	return b.String(), nil
}
