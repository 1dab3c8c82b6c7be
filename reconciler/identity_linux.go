package reconciler

import (
	"bufio"
	"os"
	"strings"
)

// loginShell is name's shell, the seventh field of its /etc/passwd line
// (os/user does not carry it); "" when there is none.
func loginShell(name string) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[0] == name {
			return fields[6]
		}
	}
	return ""
}
