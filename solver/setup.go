package solver

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/requirements"
)

type solver struct {
	// wholeLP: solve the bound's assignment LP in one piece, never pool by pool (tests compare)
	wholeLP    bool
	in         Input
	d          *dims
	zones      []string
	zoneIdx    map[string]int
	cts        []string
	ctIdx      map[string]int
	allZones   uint64
	allCTs     uint64
	pools      []*pool
	existing   []*node
	open       []*node // new nodes in creation order
	nodes      []*node // every node; node.id indexes it
	firstLive  int
	classes    []*class
	groups     []*group
	groupIdx   map[string]*group
	minReq     resVec
	w          []float64 // resource prices from the LP over the pending demand
	ds         []*dsPod
	unsched    []Unschedulable
	admits     map[string]bitset           // admitted's cache, by signature
	admitsByID map[setID]bitset            // and by backing array
	ands       map[andKey]requirements.Set // and's cache
	nsLabels   namespaceLabels
	// priorityFirst places higher-priority classes first (see Solve).
	priorityFirst bool
	tally         workTally // the budgeted LPs' work, for Result.Passes
	lb            boundMemo // the lower bound and the demand it covers (bound)
	// asgSolved: the assignment LPs lpPack solved, for the bound to reuse (reusedDuals)
	asgSolved []*lpPlan
	// droppedZones and droppedCTs are the zones and capacity types beyond the 64 of each that the
	// solver's bitmasks hold: offerings there are not used, and Result.Passes says so.
	droppedZones, droppedCTs []string
	// splitBuf and pairBuf: the split and rebalance passes' working buffers, reused across the
	// thousands of candidate splits and pairs a solve tries (splitscratch.go)
	splitBuf splitScratch
	pairBuf  pairScratch
	// fillOK, fillLive: simulateFill's working lists, reused across the fills of every type
	fillOK   []bool
	fillLive []int32
	fillRem  resVec
	// fillMemoStep, fillMemoFit, fillMemoScore: simulateFill's per-request memo
	fillMemoStep  []int32
	fillMemoFit   []bool
	fillMemoScore []float64
	// fillShapes, fillReps: reqShapes' numbering and the distinct requests (one fill or packNew
	// at a time holds them)
	fillShapes []int32
	fillReps   []resVec
	// asgSpx: the assignment LPs' simplex working arrays, reused across them
	asgSpx simplexScratch
	// noPairTypeFloor: tests only — the split pass and rebalancePair price every candidate
	// type's splits, to check that the floors they skip them by change nothing
	noPairTypeFloor bool
}

type dsPod struct {
	ds   *appsv1.DaemonSet
	req  resVec
	alts []requirements.Set
	tol  []corev1.Toleration
}

func (s *solver) zone(name string) int {
	if i, ok := s.zoneIdx[name]; ok {
		return i
	}
	if len(s.zones) >= maxDomains {
		s.droppedZones = appendNew(s.droppedZones, name)
		return -1
	}
	s.zoneIdx[name] = len(s.zones)
	s.zones = append(s.zones, name)
	s.allZones |= 1 << uint(len(s.zones)-1)
	return len(s.zones) - 1
}

func (s *solver) ct(name string) int {
	if i, ok := s.ctIdx[name]; ok {
		return i
	}
	if len(s.cts) >= maxDomains {
		s.droppedCTs = appendNew(s.droppedCTs, name)
		return -1
	}
	s.ctIdx[name] = len(s.cts)
	s.cts = append(s.cts, name)
	s.allCTs |= 1 << uint(len(s.cts)-1)
	return len(s.cts) - 1
}

// setup builds the resource dimensions and the zone and capacity-type universes.
func (s *solver) setup() {
	names := map[corev1.ResourceName]bool{}
	for _, p := range s.in.Pods {
		collectResourceNames(&p.Spec, names)
	}
	for _, ds := range s.in.DaemonSets {
		collectResourceNames(&ds.Spec.Template.Spec, names)
	}
	s.d = newDims(names)
	s.nsLabels = newNamespaceLabels(s.in.Namespaces)
	s.zoneIdx, s.ctIdx = map[string]int{}, map[string]int{}
	var zones, cts []string
	for _, pi := range s.in.NodePools {
		// Only the zones and capacity types a pool's requirements admit count towards the 64 of
		// each the masks hold (a catalog may offer more than a pool may use).
		admits := func(string, string) bool { return true }
		if pi.NodePool != nil {
			if reqs, err := requirements.ForNodePool(pi.NodePool); err == nil {
				zr, zok := reqs.Get(v1.LabelTopologyZone)
				cr, cok := reqs.Get(v1.CapacityTypeLabelKey)
				admits = func(z, c string) bool { return (!zok || zr.Has(z)) && (!cok || cr.Has(c)) }
			}
		}
		for _, it := range pi.InstanceTypes {
			if it == nil {
				continue
			}
			for _, o := range it.Offerings {
				if admits(o.Zone, o.CapacityType) {
					zones = append(zones, o.Zone)
					cts = append(cts, o.CapacityType)
				}
			}
		}
	}
	for _, n := range s.in.Nodes {
		if z, ok := n.Labels[v1.LabelTopologyZone]; ok {
			zones = append(zones, z)
		}
	}
	for _, z := range uniqSorted(zones) {
		s.zone(z)
	}
	for _, c := range uniqSorted(cts) {
		s.ct(c)
	}
}

func (s *solver) buildPools() {
	var entries []NodePoolInput
	for _, pi := range s.in.NodePools {
		if pi.NodePool != nil {
			entries = append(entries, pi)
		}
	}
	weight := func(pi NodePoolInput) int32 {
		if pi.NodePool.Spec.Weight != nil {
			return *pi.NodePool.Spec.Weight
		}
		return 0
	}
	sort.SliceStable(entries, func(i, j int) bool {
		wi, wj := weight(entries[i]), weight(entries[j])
		if wi != wj {
			return wi > wj
		}
		return entries[i].NodePool.Name < entries[j].NodePool.Name
	})
	catalogs := make([][]*catalog.InstanceType, 0, len(entries))
	for _, pi := range entries {
		catalogs = append(catalogs, pi.InstanceTypes)
	}
	known := requirements.Known(catalogs...)
	for _, pi := range entries {
		np := pi.NodePool
		p := &pool{idx: len(s.pools), name: np.Name, np: np, weight: weight(pi), compat: map[string]bitset{}, typeKeys: known}
		p.templLabels = np.Spec.Template.Labels
		var err error
		p.reqs, err = requirements.ForNodePool(np)
		bad := err != nil
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.MinValues != nil {
				p.minValues = append(p.minValues, minValue{key: r.Key, n: *r.MinValues})
			}
		}
		if bad || p.reqs.Conflict() != "" {
			continue
		}
		zr, zok := p.reqs.Get(v1.LabelTopologyZone)
		cr, cok := p.reqs.Get(v1.CapacityTypeLabelKey)
		p.zoneMask = maskFor(zr, zok, s.zones) & s.allZones
		p.ctMask = maskFor(cr, cok, s.cts) & s.allCTs
		for _, t := range np.Spec.Template.Spec.Taints {
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute:
				p.taints = append(p.taints, t)
			case corev1.TaintEffectPreferNoSchedule:
				p.preferTaints = append(p.preferTaints, t)
			}
		}
		if pi.Remaining != nil {
			p.limited = true
			p.remaining = s.d.zero()
			for i := range p.remaining {
				p.remaining[i] = unlimited
			}
			for name, q := range pi.Remaining {
				if i, ok := s.d.index[name]; ok {
					p.remaining[i] = capacityMilli(q)
				}
			}
			p.committed = s.d.zero()
		}
		s.buildTypes(p, pi.InstanceTypes)
		s.pools = append(s.pools, p)
	}
}

func (s *solver) buildTypes(p *pool, its []*catalog.InstanceType) {
	seen := map[string]bool{}
	for _, it := range its {
		if it == nil || seen[it.Name] {
			continue
		}
		seen[it.Name] = true
		t := &itype{it: it}
		ok := true
		for _, kr := range p.reqs {
			val, present, resolved := p.labelOf(t, kr.Key)
			if resolved && !kr.Matches(val, present) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			z, zok := s.zoneIdx[o.Zone]
			c, cok := s.ctIdx[o.CapacityType]
			if !zok || !cok { // beyond the 64 the masks hold (droppedZones, droppedCTs)
				continue
			}
			if p.zoneMask&(1<<uint(z)) == 0 || p.ctMask&(1<<uint(c)) == 0 {
				continue
			}
			t.offers = append(t.offers, offer{zone: z, ct: c, price: o.Price, o: o})
			t.zones |= 1 << uint(z)
		}
		if len(t.offers) == 0 {
			continue
		}
		sort.SliceStable(t.offers, func(i, j int) bool {
			a, b := t.offers[i], t.offers[j]
			if a.price != b.price {
				return a.price < b.price
			}
			if a.o.Zone != b.o.Zone {
				return a.o.Zone < b.o.Zone
			}
			return a.o.CapacityType < b.o.CapacityType
		})
		t.minPrice = t.offers[0].price
		t.indexOffers()
		t.capacity = s.d.capacityVec(it.Capacity)
		t.alloc = t.capacity.clone()
		t.alloc.sub(s.d.vec(it.Overhead))
		p.types = append(p.types, t)
	}
	sort.SliceStable(p.types, func(i, j int) bool {
		if p.types[i].minPrice != p.types[j].minPrice {
			return p.types[i].minPrice < p.types[j].minPrice
		}
		return p.types[i].it.Name < p.types[j].it.Name
	})
	p.all = newBitset(len(p.types))
	for i, t := range p.types {
		t.idx = i
		t.ds = s.d.zero()
		for _, ds := range s.ds {
			if s.dsRuns(ds, p, t) {
				t.ds.add(ds.req)
			}
		}
		t.alloc.sub(t.ds)
		p.all.set(i)
	}
}

func (s *solver) buildDaemonSets() {
	dss := append([]*appsv1.DaemonSet(nil), s.in.DaemonSets...)
	sort.SliceStable(dss, func(i, j int) bool {
		if dss[i].Namespace != dss[j].Namespace {
			return dss[i].Namespace < dss[j].Namespace
		}
		return dss[i].Name < dss[j].Name
	})
	for _, ds := range dss {
		if ds == nil {
			continue
		}
		spec := &ds.Spec.Template.Spec
		alts, err := requirements.ForPod(spec)
		if err != nil {
			continue
		}
		s.ds = append(s.ds, &dsPod{ds: ds, req: s.d.podRequests(spec), alts: alts, tol: spec.Tolerations})
	}
}

// dsRuns reports whether a daemonset pod would run on a node of type t from pool p: it tolerates
// the pool's taints and its node selection admits the type in some zone the type is offered in.
func (s *solver) dsRuns(ds *dsPod, p *pool, t *itype) bool {
	if _, ok := untolerated(ds.tol, p.taints); ok {
		return false
	}
	for _, alt := range ds.alts {
		if typeAdmits(p, t, alt, s.zones, s.cts) {
			return true
		}
	}
	return false
}

// typeAdmits reports whether a node of type t in pool p can satisfy the requirement set.
func typeAdmits(p *pool, t *itype, rs requirements.Set, zones, cts []string) bool {
	zm, cm := ^uint64(0), ^uint64(0)
	for _, kr := range rs {
		switch kr.Key {
		case v1.LabelTopologyZone:
			zm = maskFor(kr.Requirement, true, zones)
			continue
		case v1.CapacityTypeLabelKey:
			cm = maskFor(kr.Requirement, true, cts)
			continue
		}
		val, present, resolved := p.labelOf(t, kr.Key)
		if resolved {
			if !kr.Matches(val, present) {
				return false
			}
			continue
		}
		pr, _ := p.reqs.Get(kr.Key)
		x := pr.Intersect(kr.Requirement)
		if x.Empty() {
			return false
		}
	}
	_, oi := t.price(zm, cm)
	return oi >= 0
}

// untolerated returns the first NoSchedule/NoExecute (or given) taint not tolerated.
func untolerated(tols []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	if i := untoleratedAt(tols, taints); i >= 0 {
		return taints[i], true
	}
	return corev1.Taint{}, false
}

// untoleratedAt is the index of the first of taints that tols do not tolerate, or -1.
func untoleratedAt(tols []corev1.Toleration, taints []corev1.Taint) int {
	for i := range taints {
		ok := false
		for j := range tols {
			if tolerates(&tols[j], &taints[i]) {
				ok = true
				break
			}
		}
		if !ok {
			return i
		}
	}
	return -1
}

func tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return t.Value == taint.Value
	}
	return false
}

func (s *solver) buildExisting() {
	ex := append([]ExistingNode(nil), s.in.Nodes...)
	sort.SliceStable(ex, func(i, j int) bool { return ex[i].Name < ex[j].Name })
	for i := range ex {
		e := &ex[i]
		n := &node{id: len(s.nodes), name: e.Name, ex: e, zone: -1, cheap: -1}
		if z, ok := e.Labels[v1.LabelTopologyZone]; ok {
			n.zone = s.zone(z)
		}
		for _, t := range e.Taints {
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute:
				n.taints = append(n.taints, t)
			case corev1.TaintEffectPreferNoSchedule:
				n.preferTaints = append(n.preferTaints, t)
			}
		}
		n.alloc = s.d.capacityVec(e.Allocatable)
		n.used = s.d.zero()
		for _, p := range e.Pods {
			if p == nil || finished(p) {
				continue
			}
			n.used.add(s.d.podRequests(&p.Spec))
			n.ports = append(n.ports, podHostPorts(&p.Spec)...)
		}
		for _, pl := range s.pools {
			if pl.name == e.NodePool {
				n.pool = pl
			}
		}
		s.nodes = append(s.nodes, n)
		s.existing = append(s.existing, n)
	}
}

// finished reports whether a pod has terminated: it holds no capacity and counts for no topology.
func finished(p *corev1.Pod) bool { return podkind.IsFinished(p) }

// appendNew appends name to list unless it is there already.
func appendNew(list []string, name string) []string {
	for _, n := range list {
		if n == name {
			return list
		}
	}
	return append(list, name)
}
