// Package boolflag makes the help of boolean pflag flags read as it did
// before pflag v1.1.0: "-h, --help", not "-h, --help[=true|false]".
//
// pflag v1.1.0 prints "[=true|false]" after every flag whose Value has an
// IsBoolFlag method, which reads as if the flag took a value. Plain hides
// that method behind a wrapper; parsing is unchanged, because pflag reads a
// valueless boolean flag from its NoOptDefVal ("true"), set when the flag
// was defined, and "--flag=false" still goes through Set.
package boolflag

import "github.com/spf13/pflag"

// plain is a bool flag's Value without IsBoolFlag.
type plain struct{ pflag.Value }

// Plain wraps the Value of every boolean flag of fs (defined so far) so that
// its help shows no "[=true|false]". It is idempotent.
func Plain(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if _, done := f.Value.(plain); done || f.Value.Type() != "bool" || f.NoOptDefVal == "" {
			return
		}
		f.Value = plain{f.Value}
	})
}
