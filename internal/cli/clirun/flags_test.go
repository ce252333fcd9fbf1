package clirun

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestFlagsOverFile(t *testing.T) {
	type opts struct {
		Port     int
		Interval time.Duration
		Name     string
		Caps     []string
		On       bool
	}
	defaults := opts{Port: 8090, Interval: 10 * time.Second, Name: "default", Caps: []string{"NET_ADMIN"}, On: true}
	file := func(o *opts) error { // what a configuration file holds
		o.Port, o.Interval, o.Caps, o.On = 9000, time.Minute, []string{"SYS_ADMIN", "NET_RAW"}, false
		return nil
	}
	tests := []struct {
		name string
		args []string
		load func(*opts) error
		want opts
	}{
		{"no file", nil, func(*opts) error { return nil }, defaults},
		{"file over defaults", nil, file,
			opts{Port: 9000, Interval: time.Minute, Name: "default", Caps: []string{"SYS_ADMIN", "NET_RAW"}}},
		{"flags over file", []string{"--port", "1234", "--caps", "CHOWN", "--on=true"}, file,
			opts{Port: 1234, Interval: time.Minute, Name: "default", Caps: []string{"CHOWN"}, On: true}},
		{"a flag set to its default still wins", []string{"--interval", "10s", "--port=8090"}, file,
			opts{Port: 8090, Interval: 10 * time.Second, Name: "default", Caps: []string{"SYS_ADMIN", "NET_RAW"}}},
		{"repeated slice flag", []string{"--caps", "A", "--caps", "B,C"}, file,
			opts{Port: 9000, Interval: time.Minute, Name: "default", Caps: []string{"A", "B", "C"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults
			o.Caps = append([]string(nil), defaults.Caps...)
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			fs.IntVar(&o.Port, "port", o.Port, "")
			fs.DurationVar(&o.Interval, "interval", o.Interval, "")
			fs.StringVar(&o.Name, "name", o.Name, "")
			fs.StringSliceVar(&o.Caps, "caps", o.Caps, "")
			fs.BoolVar(&o.On, "on", o.On, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := FlagsOverFile(fs, func() error { return tc.load(&o) }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o, tc.want) {
				t.Fatalf("got %+v, want %+v", o, tc.want)
			}
		})
	}
	t.Run("load error", func(t *testing.T) {
		boom := errors.New("boom")
		if err := FlagsOverFile(pflag.NewFlagSet("t", pflag.ContinueOnError), func() error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
}
