package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer ": "", "": ""} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", header)
		got, ok := bearerToken(req)
		if got != want || ok != (want != "") {
			t.Errorf("bearerToken(%q) = %q, %t; want %q", header, got, ok, want)
		}
	}
}

// The full path runs against a real apiserver in test/deploy's TestMetricsEndpoint; this checks the
// caching: Prometheus scraping every 15 s must not cost two reviews a scrape.
func TestReviewsAreCached(t *testing.T) {
	cs := fake.NewClientset()
	var tokenReviews, accessReviews int
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tokenReviews++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: tr.Spec.Token != "bad", User: authenticationv1.UserInfo{Username: "u-" + tr.Spec.Token}}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		accessReviews++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ok := sar.Spec.User == "u-reader" && sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get"
		sar.Status.Allowed = ok
		return true, sar, nil
	})
	g := &guard{tokens: cs.AuthenticationV1().TokenReviews(), access: cs.AuthorizationV1().SubjectAccessReviews(),
		users: cache.NewLRUExpireCache(8), decisions: cache.NewLRUExpireCache(8)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	scrape := func(token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		g.serve(logr.Discard(), ok, w, req)
		return w.Code
	}
	for range 3 {
		if code := scrape("reader"); code != http.StatusOK {
			t.Fatalf("reader: HTTP %d, want 200", code)
		}
		if code := scrape("other"); code != http.StatusForbidden {
			t.Fatalf("other: HTTP %d, want 403", code)
		}
		if code := scrape("bad"); code != http.StatusUnauthorized {
			t.Fatalf("bad token: HTTP %d, want 401", code)
		}
	}
	// A token that fails authentication is reviewed each time (it may be valid a moment later);
	// authenticated users and their decisions are cached.
	if tokenReviews != 2+3 || accessReviews != 2 {
		t.Fatalf("%d TokenReviews and %d SubjectAccessReviews for 9 scrapes, want 5 and 2", tokenReviews, accessReviews)
	}
}
