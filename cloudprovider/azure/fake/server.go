// Package fake is an HTTP-level fake of the Azure Resource Manager endpoints the Azure provider
// calls (Resource SKUs, virtual machines, network interfaces, subnets, community gallery image
// versions) and of the Retail Prices API, used through the real SDK clients. It models ARM's
// long-running operations (201/202 with an Azure-AsyncOperation URL polled to Succeeded or
// Failed), throttling (429 with Retry-After) and ARM error bodies ({"error":{"code","message"}}).
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	azuredata "github.com/joist-dev/joist/catalog/azure"
)

// Fixture values of the standard fake.
const (
	Subscription  = "00000000-0000-0000-0000-000000000001"
	ResourceGroup = "MC_rg_prod_eastus"
	Location      = "eastus"
	SubnetID      = "/subscriptions/" + Subscription + "/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
	ImageVersion  = "202511.10.0"
)

// Failure is what the next matching VM create returns.
type Failure struct {
	Code, Message string
	// Async fails the long-running operation instead of the PUT (as ARM does for AllocationFailed).
	Async bool
	// Size and Zone restrict the failure to one offering ("" matches any).
	Size, Zone string
}

// Call is one request the fake served.
type Call struct {
	Method, Path string
	Status       int
}

// Server is the fake.
type Server struct {
	srv *httptest.Server

	mu             sync.Mutex
	skus           []*armcompute.ResourceSKU
	vms            map[string]*armcompute.VirtualMachine
	nics           map[string]*armnetwork.Interface
	ops            map[string]*operation
	nextOp         int
	throttle       int
	failures       []Failure
	calls          []Call
	spotPrices     map[string]float64
	onDemand       map[string]float64
	imageVersion   string
	lastCustomData string
	holdCreates    bool
	tokens         map[string]bool
	tokenRequests  int
}

type operation struct {
	held    bool // InProgress until ReleaseCreates
	polls   int  // InProgress answers left
	errCode string
	errMsg  string
	done    func() // applied when it succeeds
}

// New starts the fake with the embedded catalog's SKUs in eastus (zones 1–3), its on-demand prices
// and spot at a third of them, and one node image version per definition.
func New() *Server {
	s := &Server{vms: map[string]*armcompute.VirtualMachine{}, nics: map[string]*armnetwork.Interface{}, ops: map[string]*operation{},
		spotPrices: map[string]float64{}, onDemand: map[string]float64{}, imageVersion: ImageVersion, tokens: map[string]bool{staticTokenValue: true}}
	for _, sku := range azuredata.Embedded().SKUs {
		api := &armcompute.ResourceSKU{Name: to.Ptr(sku.Name), Family: to.Ptr(sku.Family), ResourceType: to.Ptr("virtualMachines"),
			Tier: to.Ptr("Standard"), Locations: []*string{to.Ptr(Location)},
			LocationInfo: []*armcompute.ResourceSKULocationInfo{{Location: to.Ptr(Location), Zones: []*string{to.Ptr("1"), to.Ptr("2"), to.Ptr("3")}}}}
		for k, v := range sku.Capabilities {
			api.Capabilities = append(api.Capabilities, &armcompute.ResourceSKUCapabilities{Name: to.Ptr(k), Value: to.Ptr(v)})
		}
		s.skus = append(s.skus, api)
		if p, ok := sku.OnDemandPrices[Location]; ok {
			s.onDemand[sku.Name] = p
			s.spotPrices[sku.Name] = p / 3
		}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the fake's base URL (Resource Manager and Retail Prices endpoint alike).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the fake.
func (s *Server) Close() { s.srv.Close() }

// Credential is a static token credential for the fake.
func Credential() azcore.TokenCredential { return staticToken{} }

type staticToken struct{}

const staticTokenValue = "fake"

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: staticTokenValue, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// ThrottleNext answers the next n requests with 429 and Retry-After: 1.
func (s *Server) ThrottleNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
}

// FailNextCreate makes the next VM create that matches fail.
func (s *Server) FailNextCreate(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
}

// SetImageVersion publishes a newer node image version.
func (s *Server) SetImageVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imageVersion = v
}

// Calls returns the requests served whose method and path match.
func (s *Server) Calls(method, pathPart string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method && strings.Contains(c.Path, pathPart) {
			out = append(out, c)
		}
	}
	return out
}

// VMs returns copies of the VMs, by name.
func (s *Server) VMs() map[string]*armcompute.VirtualMachine {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*armcompute.VirtualMachine{}
	for k, v := range s.vms {
		c := *v
		out[k] = &c
	}
	return out
}

// NICs returns the names of the NICs.
func (s *Server) NICs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.nics {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// AddNIC adds a NIC as a failed launch or an out-of-band delete would leave it.
func (s *Server) AddNIC(name string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nic := &armnetwork.Interface{Name: to.Ptr(name), ID: to.Ptr(s.rgID() + "/providers/Microsoft.Network/networkInterfaces/" + name), Tags: map[string]*string{},
		Location: to.Ptr(Location), Properties: &armnetwork.InterfacePropertiesFormat{ProvisioningState: to.Ptr(armnetwork.ProvisioningStateSucceeded)}}
	for k, v := range tags {
		nic.Tags[k] = to.Ptr(v)
	}
	s.nics[name] = nic
}

// EvictSpot evicts a spot VM as Azure does with eviction policy Delete: the VM, and the NIC and
// disk set to be deleted with it, are gone.
func (s *Server) EvictSpot(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm, ok := s.vms[name]
	if !ok || vm.Properties.Priority == nil || *vm.Properties.Priority != armcompute.VirtualMachinePriorityTypesSpot {
		return fmt.Errorf("no spot VM %s", name)
	}
	s.deleteVMLocked(name)
	return nil
}

func (s *Server) rgID() string {
	return "/subscriptions/" + Subscription + "/resourceGroups/" + ResourceGroup
}

var (
	vmPath     = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Compute/virtualMachines(?:/([^/]+))?$`)
	nicPath    = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Network/networkInterfaces(?:/([^/]+))?$`)
	subnetPath = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Network/virtualNetworks/([^/]+)/subnets/([^/]+)$`)
	skuPath    = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/providers/Microsoft\.Compute/skus$`)
	imagePath  = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/providers/Microsoft\.Compute/locations/([^/]+)/communityGalleries/([^/]+)/images/([^/]+)/versions$`)
	opPath     = regexp.MustCompile(`^/operations/([0-9]+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &recorder{ResponseWriter: w, status: 200}
	defer func() { s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, Status: rec.status}) }()
	if s.throttle > 0 && r.URL.Path != ManagedIdentityPath {
		s.throttle--
		rec.Header().Set("Retry-After", "1")
		armError(rec, http.StatusTooManyRequests, "TooManyRequests", "The request is being throttled.")
		return
	}
	p := r.URL.Path
	switch p {
	case ManagedIdentityPath:
		s.managedIdentityToken(rec, r)
		return
	case "/api/retail/prices": // public, unauthenticated
		s.prices(rec, r)
		return
	}
	if !s.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
		armError(rec, http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing or carries a token this tenant did not issue.")
		return
	}
	switch {
	case opPath.MatchString(p):
		s.operation(rec, opPath.FindStringSubmatch(p)[1])
	case skuPath.MatchString(p):
		writeJSON(rec, 200, map[string]any{"value": s.skus})
	case imagePath.MatchString(p):
		m := imagePath.FindStringSubmatch(p)
		writeJSON(rec, 200, map[string]any{"value": []*armcompute.CommunityGalleryImageVersion{{Name: to.Ptr(s.imageVersion), Location: to.Ptr(m[1])}}})
	case subnetPath.MatchString(p):
		m := subnetPath.FindStringSubmatch(p)
		id := "/subscriptions/" + Subscription + "/resourceGroups/" + m[1] + "/providers/Microsoft.Network/virtualNetworks/" + m[2] + "/subnets/" + m[3]
		if !strings.EqualFold(id, SubnetID) {
			armError(rec, 404, "NotFound", "Resource "+id+" not found.")
			return
		}
		writeJSON(rec, 200, armnetwork.Subnet{ID: to.Ptr(SubnetID), Name: to.Ptr(m[3])})
	case vmPath.MatchString(p):
		s.vm(rec, r, vmPath.FindStringSubmatch(p))
	case nicPath.MatchString(p):
		s.nic(rec, r, nicPath.FindStringSubmatch(p))
	default:
		armError(rec, 404, "InvalidResourceType", "no route for "+r.Method+" "+p)
	}
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// armError writes ARM's error body.
func armError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("x-ms-error-code", code)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// startOperation registers a long-running operation and sets its Azure-AsyncOperation header.
func (s *Server) startOperation(w http.ResponseWriter, r *http.Request, op *operation) {
	s.nextOp++
	id := fmt.Sprint(s.nextOp)
	s.ops[id] = op
	w.Header().Set("Azure-AsyncOperation", "http://"+r.Host+"/operations/"+id)
}

func (s *Server) operation(w http.ResponseWriter, id string) {
	op, ok := s.ops[id]
	if !ok {
		armError(w, 404, "NotFound", "operation "+id)
		return
	}
	if op.held || op.polls > 0 {
		if !op.held {
			op.polls--
		}
		writeJSON(w, 200, map[string]any{"status": "InProgress"})
		return
	}
	if op.errCode != "" {
		writeJSON(w, 200, map[string]any{"status": "Failed", "error": map[string]string{"code": op.errCode, "message": op.errMsg}})
		return
	}
	if op.done != nil {
		op.done()
		op.done = nil
	}
	writeJSON(w, 200, map[string]any{"status": "Succeeded"})
}

// LastCustomData is the custom data of the last VM create (ARM never returns it on GET).
func (s *Server) LastCustomData() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastCustomData
}
