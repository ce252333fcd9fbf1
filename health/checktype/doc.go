// Package checktype is the one registry of check types: each type is declared once (its name, its
// options with one spelling, their defaults and validation, and a line of documentation) and every
// way of configuring a check is read through it: the arguments and the YAML file of the container
// healthcheck (package healthcheck) and the YAML of `vitals serve` (package serve).
//
// An option has one name, written snake_case in YAML ("ca_file") and kebab-case on the command
// line ("--ca-file"). Older spellings stay as aliases: deprecated ones still work and produce a
// Warning, which the caller reports once.
//
// A frontend turns what it read into an Input (positional words, named fields with their lines),
// and Type.Build resolves it against the declaration and returns the check body, or Errors that
// name the option and the line. Build errors are the frontend's to word and locate.
//
// Like package checks, this package depends on the standard library, golang.org/x/sys and
// health/checks only: the healthcheck binary links it. Check types that need Kubernetes or
// OpenStack clients are declared in their own packages and added to a Registry by the commands
// that link those clients.
package checktype
