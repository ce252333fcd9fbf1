// Package config loads Vitals' configuration: YAML files, oslo-style INI files (kuryr.conf sections),
// flags and environment, and reports bad input as an *Error naming the file, line, field and what was
// expected. Commands exit with code 2 on such an error.
package config
