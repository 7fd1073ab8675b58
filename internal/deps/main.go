package main

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/agext/levenshtein"
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/docker/docker/client"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/consul/api"
	_ "github.com/hashicorp/hcl/v2/ext/tryfunc"
	_ "github.com/hashicorp/hcl/v2/ext/typeexpr"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/hashicorp/nomad/api"
	_ "github.com/spf13/cobra"
	_ "github.com/zclconf/go-cty/cty/function/stdlib"
	_ "go.starlark.net/starlark"
	_ "go.starlark.net/starlarkstruct"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/portforward"
	_ "sigs.k8s.io/yaml"
)

func main() {}
