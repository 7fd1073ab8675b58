// Package bundle turns a run folder into a published study and checks one
// that was copied elsewhere.
//
// A bundle is a run folder (manifest.json, pipeline.hcl or pipeline.star,
// sources/ with every file the pipeline read, the tables) plus what a
// reader needs without benchflow: variables.json, report.md, report.html
// (self-contained, with the charts), REPRODUCE.md with the exact commands,
// and SHA256SUMS over every other file (`sha256sum -c SHA256SUMS`
// checks it). Because it is a run folder, engine/results reads it as one:
// `benchflow report` and `compare` need nothing special.
//
// Entry points:
//
//   - Publish writes a bundle from a run folder (and optionally one
//     .tar.gz archive of it).
//   - Verify checks a bundle against its SHA256SUMS and names the first
//     file that differs, is missing or is not listed.
//   - Stage copies a bundle's pipeline and its files into a folder that
//     `apply`'s code path can run (cmd/benchflow reproduce).
//   - UpdateMarkdown regenerates the sections of a README between
//     `<!-- benchflow:report BUNDLE -->` and `<!-- /benchflow -->`.
//
// Reading and writing tables is engine/results' job; the report (text,
// markdown, HTML) is engine/report's.
package bundle
