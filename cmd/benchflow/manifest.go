package main

import "github.com/benchflow/benchflow/engine/results"

func readManifestSeed(runDir string) (int64, error) {
	m, err := results.ReadManifest(runDir)
	if err != nil {
		return 0, err
	}
	return m.Seed, nil
}
