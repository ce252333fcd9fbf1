package clirun

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/vitalsproject/vitals/config"
)

// FlagsOverFile is the one precedence rule of Vitals' commands: a flag given on the command line wins
// over the configuration file, and the file over the flag's default.
//
// The flags are bound to the variables the file is loaded into. FlagsOverFile remembers the flags
// the command line set, calls load (which writes every option the file holds into those variables),
// then sets the remembered flags again. A flag whose value cannot be set again is a *config.Error.
func FlagsOverFile(fs *pflag.FlagSet, load func() error) error {
	type given struct {
		flag  *pflag.Flag
		value string
		slice []string
	}
	var set []given
	fs.Visit(func(f *pflag.Flag) {
		g := given{flag: f, value: f.Value.String()}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			g.slice = s.GetSlice()
		}
		set = append(set, g)
	})
	if err := load(); err != nil {
		return err
	}
	for _, g := range set {
		var err error
		if s, ok := g.flag.Value.(pflag.SliceValue); ok {
			err = s.Replace(g.slice)
		} else {
			err = g.flag.Value.Set(g.value)
		}
		if err != nil {
			return &config.Error{Field: "--" + g.flag.Name, Msg: fmt.Sprintf("set again over the configuration file: %v", err)}
		}
	}
	return nil
}
