package timeouts

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	loopbackV4  = netip.MustParsePrefix("127.0.0.0/8")
	unspecified = []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}
)

// Local reports whether baseURL points at an endpoint on this machine or its
// private network, and why, in words fit for a provenance chain. Local
// endpoints get the finite local ceilings at implicit defaults (SPEC §10):
// loopback (localhost, *.localhost, 127/8, ::1), unspecified (0.0.0.0, ::),
// private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
// fe80::/10) and CGNAT (100.64/10) addresses, ".local" (mDNS) and dot-less
// host names, and "*.docker.internal". A base URL without a scheme
// ("127.0.0.1:8080/v1") is read as http. An empty or unparsable URL is not
// local: the cloud defaults are the conservative choice there.
func Local(baseURL string) (local bool, why string) {
	host := hostOf(baseURL)
	if host == "" {
		return false, ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.WithZone("").Unmap()
		switch {
		case loopbackV4.Contains(a) || a.IsLoopback():
			return true, host + " is loopback"
		case slices.Contains(unspecified, a):
			return true, host + " is this host (unspecified address)"
		case a.IsPrivate():
			return true, host + " is a private address"
		case a.IsLinkLocalUnicast():
			return true, host + " is link-local"
		case cgnat.Contains(a):
			return true, host + " is CGNAT (100.64/10)"
		}
		return false, ""
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true, host + " is loopback"
	case strings.HasSuffix(host, ".docker.internal"):
		return true, host + " is the Docker host"
	case strings.HasSuffix(host, ".local"):
		return true, host + " is an mDNS (.local) name"
	case !strings.Contains(host, "."):
		return true, host + " is a dot-less (LAN) host name"
	}
	return false, ""
}

// hostOf extracts the lower-case host of baseURL, without port, brackets or
// trailing dot; "" when there is none.
func hostOf(baseURL string) string {
	s := strings.TrimSpace(baseURL)
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}
