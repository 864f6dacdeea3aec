package fake

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// Cluster is an EKS cluster as eks:DescribeCluster describes it.
type Cluster struct {
	Name, Endpoint, CAData, Version string
	// ServiceIPv4CIDR or ServiceIPv6CIDR (with IPFamily "ipv6").
	ServiceIPv4CIDR, ServiceIPv6CIDR, IPFamily string
}

// eksState is the fake's EKS control plane, kept apart from the EC2 state.
type eksState struct {
	mu       sync.Mutex
	clusters map[string]Cluster
	denied   bool
	calls    int
}

var eksStates sync.Map // *Server → *eksState

func (s *Server) eks() *eksState {
	v, _ := eksStates.LoadOrStore(s, &eksState{clusters: map[string]Cluster{}})
	return v.(*eksState)
}

// SetCluster publishes c to DescribeCluster.
func (s *Server) SetCluster(c Cluster) {
	e := s.eks()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clusters[c.Name] = c
}

// DenyDescribeCluster makes DescribeCluster answer AccessDeniedException (a role without
// eks:DescribeCluster) while denied is true.
func (s *Server) DenyDescribeCluster(denied bool) {
	e := s.eks()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.denied = denied
}

// DescribeClusterCalls counts DescribeCluster requests served.
func (s *Server) DescribeClusterCalls() int {
	e := s.eks()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// isEKSRequest: the EKS API is REST-JSON (GET /clusters/<name>), unlike the other services.
func isEKSRequest(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/clusters/")
}

// serveEKS answers DescribeCluster.
func (s *Server) serveEKS(w http.ResponseWriter, r *http.Request) {
	e := s.eks()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	name := strings.TrimPrefix(r.URL.Path, "/clusters/")
	s.calls = append(s.calls, Call{Service: "eks", Action: "DescribeCluster", Body: map[string]any{"name": name}})
	if e.denied {
		writeRESTError(w, http.StatusForbidden, "AccessDeniedException",
			"User: arn:aws:sts::123456789012:assumed-role/joist/joist is not authorized to perform: eks:DescribeCluster on resource: arn:aws:eks:"+s.Region+":123456789012:cluster/"+name)
		return
	}
	c, ok := e.clusters[name]
	if !ok {
		writeRESTError(w, http.StatusNotFound, "ResourceNotFoundException", "No cluster found for name: "+name+".")
		return
	}
	network := map[string]any{"ipFamily": "ipv4", "serviceIpv4Cidr": c.ServiceIPv4CIDR}
	if c.IPFamily == "ipv6" {
		network = map[string]any{"ipFamily": "ipv6", "serviceIpv6Cidr": c.ServiceIPv6CIDR}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"cluster": map[string]any{
		"name": c.Name, "arn": "arn:aws:eks:" + s.Region + ":123456789012:cluster/" + c.Name, "status": "ACTIVE",
		"endpoint": c.Endpoint, "version": c.Version, "certificateAuthority": map[string]any{"data": c.CAData},
		"kubernetesNetworkConfig": network,
	}})
}

func writeRESTError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
