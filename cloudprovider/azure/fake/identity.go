package fake

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ManagedIdentityPath is the fake's managed identity token endpoint. A process finds it as
// azidentity's ManagedIdentityCredential finds an App Service identity endpoint: through
// $IDENTITY_ENDPOINT (the fake's URL plus this path) and $IDENTITY_HEADER (IdentityHeader). The
// fake then accepts the issued tokens on every Resource Manager call and answers any other with
// 401 AuthenticationFailed.
const ManagedIdentityPath = "/msi/token"

// IdentityHeader is the secret a caller of the identity endpoint sends as X-IDENTITY-HEADER.
const IdentityHeader = "joist-fake-identity-header"

// ManagedIdentityEnv is the environment that points azidentity's managed identity credential at the fake.
func (s *Server) ManagedIdentityEnv() []string {
	return []string{"IDENTITY_ENDPOINT=" + s.URL() + ManagedIdentityPath, "IDENTITY_HEADER=" + IdentityHeader}
}

// managedIdentityToken answers the App Service managed identity protocol (api-version 2019-08-01)
// for the Resource Manager audience.
func (s *Server) managedIdentityToken(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.Header.Get("X-IDENTITY-HEADER") != IdentityHeader:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_request", "error_description": "X-IDENTITY-HEADER is missing or wrong"})
		return
	case q.Get("api-version") != "2019-08-01" || q.Get("resource") == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "api-version 2019-08-01 and a resource are required"})
		return
	}
	s.tokenRequests++
	token := fmt.Sprintf("fake-msi-%d", s.tokenRequests)
	s.tokens[token] = true
	expires := time.Now().Add(time.Hour)
	writeJSON(w, http.StatusOK, map[string]string{
		"access_token": token, "expires_on": strconv.FormatInt(expires.Unix(), 10), "resource": q.Get("resource"), "token_type": "Bearer",
	})
}

// TokensIssued is how many managed identity tokens the fake issued.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

// HoldCreates keeps the long-running operation of every VM create that follows InProgress (the VM
// exists, in provisioning state Creating) until ReleaseCreates: a create that outlasts its caller.
func (s *Server) HoldCreates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdCreates = true
}

// ReleaseCreates lets held and later VM creates complete.
func (s *Server) ReleaseCreates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdCreates = false
	for _, op := range s.ops {
		op.held = false
	}
}
