package hclconf

import (
	"io/fs"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// osFS is the pipeline's folder: symbolic links are followed only where
// they stay inside it (pipeline.DirFS).
func osFS(dir string) fs.FS { return pipeline.DirFS(dir) }
