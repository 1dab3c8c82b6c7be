package ledger

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Argv limits: the ledger keeps the first MaxArgs tokens of a command line,
// each cut to MaxArgLen bytes (ending in "…" when cut).
const (
	MaxArgs   = 8
	MaxArgLen = 64
)

// Redacted replaces a secret in a stored argv.
const Redacted = "<redacted>"

// The patterns are compiled when first used, not when a program that
// imports the package starts (hermesctl, whose every command would pay).
var (
	// urlUserinfo matches scheme://user:password@ (the password is group 2).
	urlUserinfo = lazyRegexp(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@/\s]+)(@)`)
	// bearer matches "Bearer <token>" inside one token.
	bearer = lazyRegexp(`(?i)\b(bearer|basic)(\s+)\S+`)
	// providerKey matches keys by their well-known prefixes.
	providerKey = lazyRegexp(`\b(sk-[A-Za-z0-9_-]{8,}|(sk|pk|rk)_(live|test)_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|hf_[A-Za-z0-9]{20,})`)
	// envName matches a KEY of a KEY=value token.
	envName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// lazyRegexp is the pattern expr, compiled on the first call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Redact returns the part of argv the ledger stores: the first MaxArgs
// tokens, each at most MaxArgLen bytes, with secrets replaced by Redacted:
//   - the value of a flag whose name names a secret (--api-key, --token,
//     --password, --secret, ...), both "--flag value" and "--flag=value";
//   - the value of a KEY=value token whose key names a secret (API_KEY,
//     GITHUB_TOKEN, DB_PASSWORD, ...);
//   - the password of a URL with user:password@;
//   - the token after "Bearer" (in the same token or the next one);
//   - anything shaped like a provider key (sk-..., ghp_..., AKIA..., ...).
//
// Secrets are replaced before tokens are cut, so a cut never leaves part of
// one behind.
func Redact(argv []string) []string {
	if argv == nil {
		return nil
	}
	n := min(len(argv), MaxArgs)
	out := make([]string, n)
	secretNext := false
	for i := range n {
		a := argv[i]
		switch {
		case secretNext:
			a = Redacted
			secretNext = false
		case isFlag(a):
			name, _, hasValue := strings.Cut(a, "=")
			if secretName(name) {
				if hasValue {
					a = name + "=" + Redacted
				} else {
					secretNext = true
				}
			}
		case strings.EqualFold(a, "bearer") || strings.EqualFold(a, "basic"):
			secretNext = true
		default:
			if k, _, ok := strings.Cut(a, "="); ok && envName().MatchString(k) && secretName(k) {
				a = k + "=" + Redacted
			}
		}
		if a != Redacted {
			a = redactInside(a)
		}
		out[i] = cut(a, MaxArgLen)
	}
	return out
}

// secretName reports whether a flag or variable name names a secret. The
// name is split into words at '-', '_' and '.': a word ending in token,
// secret, password, passwd or apikey (GITHUB_TOKEN, --client-secret,
// --apitoken), or one of auth, authorization, credential(s), passphrase, or
// "key" after api, access, private, secret or signing (OPENAI_API_KEY). Plural
// words do not count: --max-tokens is not a secret.
func secretName(name string) bool {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == '-' || r == '_' || r == '.'
	})
	prev := ""
	for _, w := range words {
		for _, suf := range []string{"token", "secret", "password", "passwd", "apikey", "accesskey", "privatekey"} {
			if strings.HasSuffix(w, suf) {
				return true
			}
		}
		switch w {
		case "auth", "authorization", "credential", "credentials", "passphrase", "pat":
			return true
		case "key":
			switch prev {
			case "api", "access", "private", "secret", "signing":
				return true
			}
		}
		prev = w
	}
	return false
}

// isFlag reports whether a looks like -f, --flag or --flag=value.
func isFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' || strings.HasPrefix(a, "--") && len(a) > 2
}

// redactInside replaces secrets embedded anywhere in one token.
func redactInside(a string) string {
	a = urlUserinfo().ReplaceAllString(a, "${1}"+Redacted+"${3}")
	a = bearer().ReplaceAllString(a, "${1}${2}"+Redacted)
	a = providerKey().ReplaceAllString(a, Redacted)
	return a
}

// cut shortens s to at most max bytes on a rune boundary, ending in "…".
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = "…"
	end := max - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}
