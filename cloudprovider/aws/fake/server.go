// Package fake is an HTTP-level fake of the AWS APIs Joist's AWS provider calls: EC2 (Query
// protocol, XML), SSM and Pricing (JSON 1.1), SQS (JSON 1.0). It keeps state (subnets, security
// groups, images, instance types and offerings, spot prices, launch templates, instances, capacity
// pools that run out, SSM parameters, queues) and is used through the real SDK clients pointed at
// it with BaseEndpoint, so request serialization, pagination, error codes and the SDK's retries
// are exercised. It is loopback-only and unauthenticated (signatures are not checked).
package fake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

// Server is the fake. Fields are guarded by mu; tests use the methods.
type Server struct {
	*httptest.Server

	mu              sync.Mutex
	Region          string
	subnets         []*Subnet
	securityGroups  []*SecurityGroup
	images          []*Image
	instanceTypes   []*ec2data.Info
	typeZones       map[string][]string // instance type → zones offered
	spotPrices      []SpotPrice
	launchTemplates map[string]*LaunchTemplate
	instances       []*Instance
	pools           map[Pool]int // remaining capacity; absent = unlimited
	ssm             map[string]string
	queues          map[string][]*message
	products        []string
	profiles        map[string]*InstanceProfile
	roles           map[string]bool
	throttle        map[string]int // action → calls left to throttle
	calls           []Call
	nextID          int
	policy          *Policy  // nil: every call is allowed
	denials         []string // "action on resource" answered UnauthorizedOperation
	// describeLag hides instances from DescribeInstances for this long after launch (EC2's
	// eventual consistency); fleetTokens are CreateFleet answers by ClientToken.
	describeLag time.Duration
	fleetTokens map[string]fleetAnswer
	// describeBucket, when set, rate-limits Describe* calls account-wide.
	describeBucket    *tokenBucket
	describeThrottled int
	// Launch faults (faults.go).
	exhaustedSubnets map[string]bool
	spotLimit        int
	noSpotSLR        bool
	bareFleetError   string
	bareFleetErrors  int
	// PageSize caps every paginated answer (so pagination is exercised with few items).
	PageSize int
	// clock stamps launch times and spot price history.
	clock func() time.Time
}

// Call is one request the fake served.
type Call struct {
	Service string // ec2, ssm, sqs, pricing
	Action  string
	// Params are the EC2 Query parameters; Body the JSON body of the other services.
	Params url.Values
	Body   map[string]any
}

// Subnet is a VPC subnet.
type Subnet struct {
	ID, Zone, ZoneID string
	AvailableIPs     int
	Tags             map[string]string
}

// SecurityGroup is a security group.
type SecurityGroup struct {
	ID, Name string
	Tags     map[string]string
}

// Image is an AMI.
type Image struct {
	ID, Name, Owner, Arch, CreationDate string
	Deprecated                          bool
	Tags                                map[string]string
}

// SpotPrice is one zone's spot price of a type.
type SpotPrice struct {
	InstanceType, Zone string
	Price              float64
}

// LaunchTemplate is a stored launch template with the request parameters that created it.
type LaunchTemplate struct {
	ID, Name string
	Tags     map[string]string
	// Data holds the LaunchTemplateData.* parameters, prefix stripped.
	Data url.Values
}

// Instance is a launched instance.
type Instance struct {
	ID, InstanceType, Zone, SubnetID, ImageID, LaunchTemplate, PrivateDNSName string
	// Lifecycle is "spot" or "on-demand".
	Lifecycle      string
	SecurityGroups []string
	State          string // pending, running, shutting-down, terminated
	LaunchTime     time.Time
	Tags           map[string]string
	// ENITags and SpotRequestTags are the tags the primary network interface and the spot
	// request were created with.
	ENITags, SpotRequestTags map[string]string
	// visibleAt is when DescribeInstances starts answering with the instance.
	visibleAt time.Time
}

// Pool is one capacity pool.
type Pool struct{ InstanceType, Zone, CapacityType string }

type message struct {
	id, body, receipt string
}

// New starts a fake for region with the given embedded instance types offered in zones.
func New(region string, instanceTypes []string, zones []string) *Server {
	s := &Server{
		Region: region, typeZones: map[string][]string{}, launchTemplates: map[string]*LaunchTemplate{},
		pools: map[Pool]int{}, ssm: map[string]string{}, queues: map[string][]*message{}, throttle: map[string]int{},
		PageSize: 1000, clock: time.Now, profiles: map[string]*InstanceProfile{}, roles: map[string]bool{},
		fleetTokens: map[string]fleetAnswer{}, exhaustedSubnets: map[string]bool{}, spotLimit: -1,
	}
	for _, name := range instanceTypes {
		info := ec2data.Lookup(name)
		if info == nil {
			panic(fmt.Sprintf("fake: %s is not in the embedded EC2 data", name))
		}
		s.instanceTypes = append(s.instanceTypes, info)
		s.typeZones[name] = zones
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s-%017x", prefix, s.nextID)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if isEKSRequest(r) { // eks.go
		s.serveEKS(w, r)
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		service, action, _ := strings.Cut(target, ".")
		var in map[string]any
		if len(body) > 0 {
			if err := json.Unmarshal(body, &in); err != nil {
				writeJSONError(w, http.StatusBadRequest, "SerializationException", err.Error())
				return
			}
		}
		name := map[string]string{"AmazonSSM": "ssm", "AmazonSQS": "sqs", "AWSPriceListService": "pricing"}[service]
		s.calls = append(s.calls, Call{Service: name, Action: action, Body: in})
		if s.throttled(action) {
			writeJSONError(w, http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
			return
		}
		if msg := s.authorize(s.jsonAuthz(name, action, in)); msg != "" {
			code := "AccessDeniedException"
			if name == "sqs" {
				code = "com.amazon.coral.service#AccessDeniedException"
			}
			writeJSONError(w, http.StatusBadRequest, code, msg)
			return
		}
		s.serveJSON(w, name, action, in)
		return
	}
	params, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action := params.Get("Action")
	if params.Get("Version") == iamVersion {
		s.calls = append(s.calls, Call{Service: "iam", Action: action, Params: params})
		if msg := s.authorize(s.iamAuthz(action, params)); msg != "" {
			writeIAMError(w, http.StatusForbidden, "AccessDenied", msg)
			return
		}
		s.serveIAM(w, action, params)
		return
	}
	s.calls = append(s.calls, Call{Service: "ec2", Action: action, Params: params})
	if s.throttled(action) || s.rateLimited(action) {
		writeEC2Error(w, http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
		return
	}
	if msg := s.authorize(s.ec2Authz(action, params)); msg != "" {
		writeUnauthorized(w, msg)
		return
	}
	s.serveEC2(w, action, params)
}

func (s *Server) throttled(action string) bool {
	if s.throttle[action] > 0 {
		s.throttle[action]--
		return true
	}
	return false
}

func writeEC2Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>fake</RequestID></Response>`, esc(code), esc(msg))
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}
