package cloudsim_test

import "errors"

func asErr(err error, target any) bool { return errors.As(err, target) }
