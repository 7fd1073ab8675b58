package hclconf

import (
	"io/fs"
	"os"
)

func osFS(dir string) fs.FS { return os.DirFS(dir) }
