package main

import (
	_ "github.com/benchflow/benchflow/providers/standard" // built-in providers
)
