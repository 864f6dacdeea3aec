package solver

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/requirements"
)

// offer is an available offering an instance type may launch as, within its pool's requirements.
type offer struct {
	zone, ct int
	price    float64
	o        catalog.Offering
}

// itype is an instance type as one pool sees it.
type itype struct {
	it       *catalog.InstanceType
	idx      int
	capacity resVec
	alloc    resVec // allocatable less the pool's daemonset overhead
	ds       resVec // daemonset overhead
	offers   []offer
	minPrice float64
	zones    uint64 // zones with an offer
	// ctZones[c]: the zones with an offer of capacity type c (up to the highest c offered)
	ctZones []uint64
}

// price is the cheapest offer within the zone and capacity-type masks, or -1.
func (t *itype) price(zm, cm uint64) (float64, int) {
	for i := range t.offers {
		o := &t.offers[i]
		if zm&(1<<uint(o.zone)) != 0 && cm&(1<<uint(o.ct)) != 0 {
			return o.price, i
		}
	}
	return -1, -1
}

func (t *itype) zonesFor(zm, cm uint64) uint64 {
	var m uint64
	for c, z := range t.ctZones {
		if cm&(1<<uint(c)) != 0 {
			m |= z
		}
	}
	return m & zm
}

// indexOffers sets ctZones from offers.
func (t *itype) indexOffers() {
	t.ctZones = t.ctZones[:0]
	for i := range t.offers {
		o := &t.offers[i]
		for len(t.ctZones) <= o.ct {
			t.ctZones = append(t.ctZones, 0)
		}
		t.ctZones[o.ct] |= 1 << uint(o.zone)
	}
}

type minValue struct {
	key string
	n   int
}

// slack is what the pool's limits still allow beyond the capacity committed so far.
func (p *pool) slack() resVec {
	slack := p.remaining.clone()
	slack.sub(p.committed)
	return slack
}

// splitFits reports whether replacing a node committing replaced with two nodes of types a and b
// stays within the pool's limits.
func (p *pool) splitFits(a, b int, replaced resVec) bool {
	extra := p.types[a].capacity.clone()
	extra.add(p.types[b].capacity)
	if replaced != nil {
		extra.sub(replaced)
	}
	return lessEq(extra, p.slack())
}

type pool struct {
	idx          int
	name         string
	np           *v1.NodePool
	weight       int32
	reqs         requirements.Set // requirements ∩ template labels ∩ nodepool
	templLabels  map[string]string
	zoneMask     uint64
	ctMask       uint64
	taints       []corev1.Taint // NoSchedule and NoExecute
	preferTaints []corev1.Taint
	types        []*itype // sorted by (minPrice, name)
	all          bitset
	limited      bool
	remaining    resVec
	committed    resVec
	minValues    []minValue
	compat       map[string]bitset
	typeKeys     requirements.KnownKeys // label keys some instance type of the input defines
}

// labelOf resolves what a node of type t in this pool carries for key. resolved=false means the
// pool's requirement on key decides (a key no instance type of the catalog defines) or the key is
// zone/capacity-type; requirements.KnownKeys holds the rule.
func (p *pool) labelOf(t *itype, key string) (val string, present, resolved bool) {
	if key == v1.NodePoolLabelKey {
		return p.name, true, true
	}
	val, present, resolved = p.typeKeys.TypeLabel(t.it, key)
	if resolved || key == v1.LabelTopologyZone || key == v1.CapacityTypeLabelKey {
		return val, present, resolved
	}
	if v, ok := p.templLabels[key]; ok {
		return v, true, true
	}
	if _, ok := p.reqs.Get(key); ok {
		return "", false, false
	}
	return "", false, true // nothing puts the label on the node
}

// node is an existing node, an in-flight claim or a new node being planned.
type node struct {
	id    int
	name  string
	ex    *ExistingNode
	pool  *pool
	zone  int // -1 until known
	used  resVec
	alloc resVec // existing nodes only
	ports []hostPort
	pods  []*corev1.Pod
	cls   []*class // class of each pod
	dead  bool
	// existing nodes
	taints       []corev1.Taint
	preferTaints []corev1.Taint
	vols         map[string]map[string]bool // CSI driver → attached claims; see volumes.go

	// new nodes
	reqs     requirements.Set
	zoneMask uint64
	ctMask   uint64
	options  bitset
	maxAlloc resVec
	cheap    int // cheapest option, -1 if none
	ver      int // bumped when options or masks change
	zinfoVer int
	zoffered uint64
	zprice   []float64
	commit   resVec
}

func (n *node) isNew() bool { return n.ex == nil }

type hostPort struct {
	proto string
	ip    string
	port  int32
}

func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.proto != o.proto {
		return false
	}
	return h.ip == o.ip || h.ip == "" || o.ip == "" || h.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

func podHostPorts(spec *corev1.PodSpec) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort == 0 {
					continue
				}
				proto := string(p.Protocol)
				if proto == "" {
					proto = string(corev1.ProtocolTCP)
				}
				out = append(out, hostPort{proto: proto, ip: p.HostIP, port: p.HostPort})
			}
		}
	}
	add(spec.InitContainers)
	add(spec.Containers)
	return out
}

func portsFree(used, want []hostPort) bool {
	for _, w := range want {
		for _, u := range used {
			if w.conflicts(u) {
				return false
			}
		}
	}
	return true
}

const unlimited = math.MaxInt64 / 4
