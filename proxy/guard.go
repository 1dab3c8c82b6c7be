package proxy

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// guard admits a request, or answers it and returns false. It runs before
// anything else of a request, so a refused one never reaches a provider,
// and checks, in this order:
//
//  1. Host: a loopback address or "localhost" (any IP literal when
//     Options.AllowNonLoopback). A page on a DNS name that rebinds to
//     127.0.0.1 sends its own name as Host; an IP literal cannot be
//     rebound. 403 host_not_allowed.
//  2. Origin: absent (not a browser, or a same-origin GET), or listed in
//     Options.AllowedOrigins. Browsers send it on every cross-origin POST,
//     including the "simple" text/plain ones no preflight guards. 403
//     origin_not_allowed. A listed origin gets CORS headers, and its
//     preflight (OPTIONS) is answered here, without a token, as browsers
//     send none on it.
//  3. The token: Authorization: Bearer TOKEN, compared in constant time
//     with the current token (and the previous one during its grace). 401
//     proxy_token_missing or invalid_api_key. A client may append
//     ":LABEL" (TOKEN:agent-a): the label names it apart from other
//     clients (its own give-up breaker, see sessionKey) and is not
//     checked.
//
// A refusal is an OpenAI-style error, closes the connection, and is
// logged with the method, path, peer and reason, never with the presented
// credentials or the body.
func (p *Proxy) guard(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(status int, code, why, msg, fix string) bool {
		p.opts.Logf("proxy: refused %s %q from %s: %s", r.Method, r.URL.EscapedPath(), r.RemoteAddr, why)
		e := badRequest(status, code, msg, fix).closing()
		if status == http.StatusUnauthorized {
			e.with("WWW-Authenticate", `Bearer realm="hermes proxy"`)
		}
		writeError(w, e)
		return false
	}
	if !p.hostAllowed(r.Host) {
		return refuse(http.StatusForbidden, "host_not_allowed", fmt.Sprintf("Host %q is not loopback", r.Host),
			fmt.Sprintf("refused: Host %q is not a loopback name or address", r.Host),
			"the proxy answers only requests addressed to 127.0.0.1, [::1] or localhost (a web page on another name that resolves to this machine is a DNS rebinding attack)")
	}
	origins := r.Header.Values("Origin")
	for _, o := range origins {
		if !slices.Contains(p.opts.AllowedOrigins, strings.ToLower(o)) {
			return refuse(http.StatusForbidden, "origin_not_allowed", fmt.Sprintf("Origin %q is not in gateway.allowed_origins", o),
				fmt.Sprintf("refused: a web page (Origin %q) may not use the proxy and the API keys it holds", o),
				"if you trust that page, add its origin to gateway.allowed_origins in hermes.yaml and restart hermesd")
		}
	}
	if len(origins) > 0 {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origins[0])
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
				h.Set("Access-Control-Allow-Headers", rh)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	auth := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(auth, " ")
	tok = strings.TrimSpace(tok)
	switch {
	case auth == "":
		return refuse(http.StatusUnauthorized, "proxy_token_missing", "no API key",
			`no API key: send the proxy token as the API key (Authorization: Bearer TOKEN); eval "$(hermesctl proxy env)" sets OPENAI_BASE_URL and OPENAI_API_KEY for it`, "")
	case !strings.EqualFold(scheme, "Bearer") || tok == "":
		return refuse(http.StatusUnauthorized, "invalid_api_key", "Authorization is not a bearer token",
			`the Authorization header is not "Bearer TOKEN": send the proxy token as the API key; eval "$(hermesctl proxy env)" sets OPENAI_API_KEY to it`, "")
	case !p.tokens.valid(tokenPart(tok), p.opts.Now()):
		return refuse(http.StatusUnauthorized, "invalid_api_key", "the API key is not the proxy token",
			`the API key is not this proxy's token (a provider's own key, or a token replaced by hermesctl proxy rotate-token): eval "$(hermesctl proxy env)" for the current one`, "")
	}
	return true
}

// tokenPart is the token of a presented key: the part before the first
// ":" (tokens hold none), the rest being the client's label.
func tokenPart(key string) string {
	tok, _, _ := strings.Cut(key, ":")
	return tok
}

// hostAllowed reports whether a request's Host names the proxy by a
// loopback address or "localhost".
func (p *Proxy) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, "localhost.") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || p.opts.AllowNonLoopback)
}

// SetToken makes tok the token clients must present. The token it
// replaces stays valid for grace (0: not at all): hermesd passes
// RotateGrace on `hermesctl proxy rotate-token`.
func (p *Proxy) SetToken(tok string, grace time.Duration) {
	p.tokens.set(tok, grace, p.opts.Now())
}
