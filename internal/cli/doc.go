// Package cli holds the cobra commands of the vitals binary, one file per subcommand. Each turns its
// flags into typed options and calls the package that does the work.
package cli
