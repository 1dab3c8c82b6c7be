package ledger

import (
	"reflect"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const R = Redacted
	long := strings.Repeat("a", 100)
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, nil},
		{"plain", []string{"npm", "run", "dev"}, []string{"npm", "run", "dev"}},
		{"flag value", []string{"bot", "--api-key", "abc123"}, []string{"bot", "--api-key", R}},
		{"flag=value", []string{"bot", "--api-key=abc123"}, []string{"bot", "--api-key=" + R}},
		{"token flag", []string{"bot", "--token", "t0k"}, []string{"bot", "--token", R}},
		{"password flag", []string{"psql", "--password=pw", "-h", "db"}, []string{"psql", "--password=" + R, "-h", "db"}},
		{"secret flag", []string{"x", "--client-secret", "s"}, []string{"x", "--client-secret", R}},
		{"single dash", []string{"x", "-token", "s"}, []string{"x", "-token", R}},
		{"plural is no secret", []string{"llm", "--max-tokens", "100"}, []string{"llm", "--max-tokens", "100"}},
		{"author is no secret", []string{"git", "--author", "me"}, []string{"git", "--author", "me"}},
		{"env key", []string{"env", "OPENAI_API_KEY=abc", "GITHUB_TOKEN=ghx", "DB_PASSWORD=pw", "PORT=80"}, []string{"env", "OPENAI_API_KEY=" + R, "GITHUB_TOKEN=" + R, "DB_PASSWORD=" + R, "PORT=80"}},
		{"env secret lowercase", []string{"env", "aws_secret_access_key=x"}, []string{"env", "aws_secret_access_key=" + R}},
		{"PWD is no secret", []string{"env", "PWD=/home"}, []string{"env", "PWD=/home"}},
		{"url userinfo", []string{"psql", "postgres://bob:hunter2@db:5432/app"}, []string{"psql", "postgres://bob:" + R + "@db:5432/app"}},
		{"url without password", []string{"curl", "https://example.com/a:b"}, []string{"curl", "https://example.com/a:b"}},
		{"bearer in token", []string{"curl", "-H", "Authorization: Bearer abc.def"}, []string{"curl", "-H", "Authorization: Bearer " + R}},
		{"bearer next token", []string{"x", "Bearer", "abc.def"}, []string{"x", "Bearer", R}},
		{"openai key", []string{"x", "sk-proj-abcdefghijkl"}, []string{"x", R}},
		{"anthropic key in value", []string{"x", "--model=gpt", "key:sk-ant-api03-abcdefgh"}, []string{"x", "--model=gpt", "key:" + R}},
		{"github key", []string{"x", "ghp_0123456789abcdefABCDEF"}, []string{"x", R}},
		{"aws key", []string{"x", "AKIAABCDEFGHIJKLMNOP"}, []string{"x", R}},
		{"flag value at the cap", []string{"1", "2", "3", "4", "5", "6", "7", "--token", "s"}, []string{"1", "2", "3", "4", "5", "6", "7", "--token"}},
		{"count capped", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
		{"length capped", []string{long}, []string{strings.Repeat("a", MaxArgLen-len("…")) + "…"}},
		{"redacted before cut", []string{strings.Repeat("x", 50) + "=sk-abcdefghijklmnopqrstuvwxyz"}, []string{strings.Repeat("x", 50) + "=" + R}},
		{"cut on a rune boundary", []string{strings.Repeat("é", 40)}, []string{strings.Repeat("é", 30) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			for _, a := range got {
				if len(a) > MaxArgLen {
					t.Errorf("token %q longer than %d bytes", a, MaxArgLen)
				}
			}
		})
	}
}
