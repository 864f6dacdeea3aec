package aws_test

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

func TestDiscoveryWritesStatusAndReady(t *testing.T) {
	w := newWorld(t)
	nc := w.apply(t, nodeClass("default"))
	if !nc.IsTrue(awsv1.ConditionTypeReady) {
		t.Fatalf("Ready = %+v, want True", nc.GetCondition(awsv1.ConditionTypeReady))
	}
	var subnets []string
	for _, s := range nc.Status.Subnets {
		subnets = append(subnets, s.ID+"@"+s.Zone)
	}
	// Sorted by free addresses: zone c (3000) before b (2000) before a (1000); the untagged subnet is left out.
	if got, want := strings.Join(subnets, ","), "subnet-00c@us-west-2c,subnet-00b@us-west-2b,subnet-00a@us-west-2a"; got != want {
		t.Errorf("status.subnets = %s, want %s", got, want)
	}
	if len(nc.Status.SecurityGroups) != 1 || nc.Status.SecurityGroups[0].ID != "sg-0node" {
		t.Errorf("status.securityGroups = %+v, want sg-0node only", nc.Status.SecurityGroups)
	}
	amis := map[string]string{}
	for _, a := range nc.Status.AMIs {
		amis[a.Requirements[0].Values[0]] = a.ID
	}
	if amis["amd64"] != fake.AL2023AMD64 || amis["arm64"] != fake.AL2023ARM64 {
		t.Errorf("status.amis = %v, want the SSM-published AL2023 images per arch", amis)
	}
	if nc.Status.InstanceProfile != "KarpenterNodeInstanceProfile-prod" {
		t.Errorf("status.instanceProfile = %q", nc.Status.InstanceProfile)
	}
}

func TestDiscoveryFailuresSayWhatToFix(t *testing.T) {
	w := newWorld(t)
	bad := nodeClass("nosubnets")
	bad.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other-cluster"}}}
	bad.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "team-golden-*", Owner: "123456789012"}}
	bad.Spec.AMIFamily = ptrTo(awsv1.AMIFamilyAL2023)
	nc := w.apply(t, bad)
	c := nc.GetCondition(awsv1.ConditionTypeSubnetsReady)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "subnetSelectorTerms") {
		t.Errorf("SubnetsReady = %+v, want False naming subnetSelectorTerms", c)
	}
	if r := nc.GetCondition(awsv1.ConditionTypeReady); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, "SubnetsReady") {
		t.Errorf("Ready = %+v, want False rolled up from SubnetsReady", r)
	}
	if len(nc.Status.AMIs) != 1 || nc.Status.AMIs[0].ID != fake.CustomAMI {
		t.Errorf("status.amis = %+v, want the custom AMI selected by name and owner", nc.Status.AMIs)
	}

	// A private cluster without VPC endpoints: the API does not answer at all.
	w.aws.Close()
	nc = w.apply(t, nodeClass("private"))
	c = nc.GetCondition(awsv1.ConditionTypeSubnetsReady)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "VPC endpoints") {
		t.Errorf("SubnetsReady = %+v, want False pointing at VPC endpoints", c)
	}
	if c := nc.GetCondition(awsv1.ConditionTypeAMIsReady); c == nil || !strings.Contains(c.Message, "VPC endpoints") {
		t.Errorf("AMIsReady = %+v, want a message pointing at VPC endpoints", c)
	}
}

func TestRoleGetsAManagedInstanceProfile(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass("role")
	nc.Spec.InstanceProfile, nc.Spec.Role = nil, "KarpenterNodeRole-prod"
	got := w.apply(t, nc)
	c := got.GetCondition(awsv1.ConditionTypeInstanceProfileReady)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "KarpenterNodeRole-prod") {
		t.Errorf("InstanceProfileReady = %+v, want False naming the missing role", c)
	}
	w.aws.AddRole("KarpenterNodeRole-prod")
	got = w.reconcile(t, "role")
	if !got.IsTrue(awsv1.ConditionTypeInstanceProfileReady) || !strings.HasPrefix(got.Status.InstanceProfile, "prod_") {
		t.Fatalf("InstanceProfileReady %+v, status.instanceProfile %q", got.GetCondition(awsv1.ConditionTypeInstanceProfileReady), got.Status.InstanceProfile)
	}
	profiles := w.aws.InstanceProfiles()
	if len(profiles) != 1 || profiles[0].Name != got.Status.InstanceProfile || len(profiles[0].Roles) != 1 || profiles[0].Roles[0] != "KarpenterNodeRole-prod" ||
		profiles[0].Tags["kubernetes.io/cluster/prod"] != "owned" || profiles[0].Tags["karpenter.k8s.aws/ec2nodeclass"] != "role" {
		t.Errorf("instance profiles = %+v", profiles)
	}
	// A changed role replaces the old one in the same profile.
	w.aws.AddRole("NodeRole-v2")
	stored := &awsv1.EC2NodeClass{}
	if err := w.kube.Get(context.Background(), clientKey("role"), stored); err != nil {
		t.Fatal(err)
	}
	stored.Spec.Role = "NodeRole-v2"
	if err := w.kube.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	w.reconcile(t, "role")
	if p := w.aws.InstanceProfiles(); len(p) != 1 || len(p[0].Roles) != 1 || p[0].Roles[0] != "NodeRole-v2" {
		t.Errorf("after the role change, profiles = %+v", p)
	}
}

func TestInstanceTypesArePaginatedPricedAndHaveRealAllocatable(t *testing.T) {
	w := newWorld(t)
	w.aws.PageSize = 2 // 7 types, 21 offerings: several pages each
	w.apply(t, nodeClass("default"))
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	its, err := w.provider.GetInstanceTypes(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.aws.Calls("DescribeInstanceTypes")); n != 4 {
		t.Errorf("DescribeInstanceTypes calls = %d, want 4 pages of 2", n)
	}
	if n := len(w.aws.Calls("DescribeInstanceTypeOfferings")); n != 11 {
		t.Errorf("DescribeInstanceTypeOfferings calls = %d, want 11 pages of 2", n)
	}
	if len(its) != 7 {
		t.Fatalf("got %d instance types, want 7", len(its))
	}
	byName := map[string]int{}
	for i, it := range its {
		byName[it.Name] = i
	}
	m5 := its[byName["m5.large"]]
	// Hand-checked: 8192 MiB − 615 (7.5%) − (11·29 + 255) − 100 = 6903Mi; 2000m − 70m; 29 pods.
	alloc := m5.Allocatable()
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceMemory: "6903Mi", corev1.ResourceCPU: "1930m", corev1.ResourcePods: "29", corev1.ResourceEphemeralStorage: "17Gi"} {
		if q := alloc[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m5.large allocatable %s = %s, want %s", name, q.String(), want)
		}
	}
	if m5.Labels["karpenter.k8s.aws/instance-family"] != "m5" || m5.Labels["karpenter.k8s.aws/instance-generation"] != "5" || m5.Labels["karpenter.k8s.aws/instance-cpu"] != "2" {
		t.Errorf("m5.large labels = %v", m5.Labels)
	}
	if g := its[byName["g4dn.xlarge"]]; g.Labels["karpenter.k8s.aws/instance-gpu-name"] != "t4" || g.Capacity.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 1 {
		t.Errorf("g4dn.xlarge gpu labels/capacity = %v / %v", g.Labels, g.Capacity)
	}
	prices := map[string]float64{}
	for _, o := range m5.Offerings {
		prices[o.CapacityType+"/"+o.Zone] = o.Price
	}
	if prices["on-demand/us-west-2a"] != 0.096 || prices["spot/us-west-2a"] != 0.035 || prices["spot/us-west-2c"] <= prices["spot/us-west-2a"] {
		t.Errorf("m5.large offerings = %v, want on-demand 0.096 (embedded) and per-zone spot prices", prices)
	}
}

func TestInstanceTypesFollowTheKubeletSettings(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass("default")
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptrTo[int32](110)}
	w.apply(t, nc)
	np := &v1.NodePool{}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	its, err := w.provider.GetInstanceTypes(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == "m5.large" {
			// 7577Mi − (11·110 + 255) − 100 = 6012Mi
			if q := it.Allocatable()[corev1.ResourceMemory]; q.Cmp(resource.MustParse("6012Mi")) != 0 {
				t.Errorf("m5.large memory with maxPods 110 = %s, want 6012Mi", q.String())
			}
			return
		}
	}
	t.Fatal("m5.large missing")
}

func TestCreateFleetRequestForSpot(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	nc := claim("default-abc12",
		req(v1.LabelInstanceType, "In", "m5.large", "m5.xlarge", "c5.large"),
		req(v1.CapacityTypeLabelKey, "In", "spot", "on-demand"))
	launched, err := w.provider.Create(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	calls := w.aws.Calls("CreateFleet")
	if len(calls) != 1 {
		t.Fatalf("CreateFleet calls = %d", len(calls))
	}
	p := calls[0].Params
	for k, want := range map[string]string{
		"Type": "instant", "TargetCapacitySpecification.TotalTargetCapacity": "1",
		"TargetCapacitySpecification.DefaultTargetCapacityType": "spot", "SpotOptions.AllocationStrategy": "price-capacity-optimized",
	} {
		if got := p.Get(k); got != want {
			t.Errorf("CreateFleet %s = %q, want %q", k, got, want)
		}
	}
	if p.Get("OnDemandOptions.AllocationStrategy") != "" {
		t.Errorf("spot fleet carries on-demand options")
	}
	// 3 types × 3 zonal subnets.
	overrides := overridesOf(p)
	if len(overrides) != 9 {
		t.Errorf("overrides = %v, want 3 types × 3 subnets", overrides)
	}
	tags := instanceTags(p)
	for k, want := range map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "default-abc12", "kubernetes.io/cluster/prod": "owned",
		"eks:eks-cluster-name": "prod", "Name": "default-abc12", "karpenter.k8s.aws/ec2nodeclass": "default", "team": "platform",
	} {
		if tags[k] != want {
			t.Errorf("instance tag %s = %q, want %q (all: %v)", k, tags[k], want, tags)
		}
	}
	// The cheapest spot offering is c5.large in us-west-2a.
	if launched.Labels[v1.LabelInstanceType] != "c5.large" || launched.Labels[v1.LabelTopologyZone] != "us-west-2a" || launched.Labels[v1.CapacityTypeLabelKey] != "spot" {
		t.Errorf("launched labels = %v", launched.Labels)
	}
	if !strings.HasPrefix(launched.Status.ProviderID, "aws:///us-west-2a/i-") || launched.Status.ImageID != fake.AL2023AMD64 {
		t.Errorf("launched providerID %q image %q", launched.Status.ProviderID, launched.Status.ImageID)
	}
	if launched.Annotations[awsv1.AnnotationEC2NodeClassHash] == "" {
		t.Errorf("launched claim carries no NodeClass hash")
	}
	lts := w.aws.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("launch templates = %d, want 1", len(lts))
	}
	d := lts[0].Data
	for k, want := range map[string]string{
		"ImageId": fake.AL2023AMD64, "MetadataOptions.HttpTokens": "required", "MetadataOptions.HttpPutResponseHopLimit": "1",
		"IamInstanceProfile.Name": "KarpenterNodeInstanceProfile-prod", "SecurityGroupId.1": "sg-0node",
		"BlockDeviceMapping.1.Ebs.VolumeSize": "20", "BlockDeviceMapping.1.Ebs.Encrypted": "true",
	} {
		if got := d.Get(k); got != want {
			t.Errorf("launch template %s = %q, want %q", k, got, want)
		}
	}
	userData := decode(t, d.Get("UserData"))
	for _, want := range []string{
		"Content-Type: application/node.eks.aws", "kind: NodeConfig", "name: prod",
		"apiServerEndpoint: https://ABC.gr7.us-west-2.eks.amazonaws.com", "certificateAuthority: Q0E=",
		"karpenter.sh/capacity-type=spot", "karpenter.sh/nodepool=default", "key: karpenter.sh/unregistered", // nodeagents_test.go parses it
	} {
		if !strings.Contains(userData, want) {
			t.Errorf("AL2023 user data lacks %q:\n%s", want, userData)
		}
	}
	if strings.Contains(userData, "maxPods") {
		t.Errorf("user data sets maxPods although the NodeClass does not (nodeadm computes the ENI limit)")
	}

	// Create is idempotent: the instance tagged for the claim is returned, nothing is launched.
	again, err := w.provider.Create(context.Background(), nc)
	if err != nil || again.Status.ProviderID != launched.Status.ProviderID || len(w.aws.Calls("CreateFleet")) != 1 {
		t.Errorf("second Create = %v, %v; fleets %d", again.Status.ProviderID, err, len(w.aws.Calls("CreateFleet")))
	}
}

func TestCreateFleetRequestForOnDemand(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	launched, err := w.provider.Create(context.Background(), claim("od",
		req(v1.CapacityTypeLabelKey, "In", "on-demand"), req(v1.LabelArch, "In", "arm64")))
	if err != nil {
		t.Fatal(err)
	}
	p := w.aws.Calls("CreateFleet")[0].Params
	if p.Get("OnDemandOptions.AllocationStrategy") != "lowest-price" || p.Get("TargetCapacitySpecification.DefaultTargetCapacityType") != "on-demand" {
		t.Errorf("on-demand fleet options: %v", p)
	}
	if launched.Labels[v1.LabelInstanceType] != "m6g.large" || launched.Status.ImageID != fake.AL2023ARM64 {
		t.Errorf("launched %s with %s, want m6g.large on the arm64 AMI", launched.Labels[v1.LabelInstanceType], launched.Status.ImageID)
	}
}

func TestInsufficientCapacityFallsBackAndReportsOfferings(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	reqs := []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelInstanceType, "In", "c5.large", "m5.large"), req(v1.CapacityTypeLabelKey, "In", "spot")}
	// The cheapest pool (c5.large spot in zone a) is sold out: the fleet takes the next-cheapest,
	// and the sold-out pool is remembered.
	w.aws.SetCapacity(fake.Pool{InstanceType: "c5.large", Zone: "us-west-2a", CapacityType: "spot"}, 0)
	launched, err := w.provider.Create(ctx, claim("ice-1", reqs...))
	if err != nil {
		t.Fatal(err)
	}
	if got := launched.Labels[v1.LabelInstanceType] + "/" + launched.Labels[v1.LabelTopologyZone]; got != "c5.large/us-west-2b" {
		t.Errorf("launched %s, want the next-cheapest c5.large/us-west-2b", got)
	}
	if !w.unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "c5.large", Zone: "us-west-2a", CapacityType: "spot"}) {
		t.Errorf("the sold-out offering is not marked unavailable")
	}
	// Every pool sold out: an InsufficientCapacityError naming the refused offerings.
	for _, it := range []string{"c5.large", "m5.large"} {
		for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
			w.aws.SetCapacity(fake.Pool{InstanceType: it, Zone: z, CapacityType: "spot"}, 0)
		}
	}
	_, err = w.provider.Create(ctx, claim("ice-2", reqs...))
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("err = %v, want InsufficientCapacityError", err)
	}
	if len(ice.Offerings) != 5 { // c5.large/a is skipped (cached unavailable): 2 types × 3 zones − 1
		t.Errorf("refused offerings = %+v, want 5", ice.Offerings)
	}
	// Once the launch path marks them, nothing launchable is left: the error comes without a call.
	for _, o := range ice.Offerings {
		w.unavailable.MarkUnavailable(o)
	}
	fleets := len(w.aws.Calls("CreateFleet"))
	if _, err := w.provider.Create(ctx, claim("ice-3", reqs...)); !cloudprovider.IsInsufficientCapacityError(err) || len(w.aws.Calls("CreateFleet")) != fleets {
		t.Errorf("err = %v after all offerings were marked; fleets %d → %d", err, fleets, len(w.aws.Calls("CreateFleet")))
	}
}

func TestThrottlingIsRetriedBySDK(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	launched, err := w.provider.Create(context.Background(), claim("thr", req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	before := len(w.aws.Calls("DescribeInstances"))
	w.aws.Throttle("DescribeInstances", 2)
	got, err := w.provider.Get(context.Background(), launched.Status.ProviderID)
	if err != nil {
		t.Fatalf("Get after 2 RequestLimitExceeded = %v, want the SDK's retryer to get through", err)
	}
	if got.Name != "thr" {
		t.Errorf("Get name = %q, want the nodeclaim tag", got.Name)
	}
	if n := len(w.aws.Calls("DescribeInstances")) - before; n != 3 {
		t.Errorf("DescribeInstances attempts = %d, want 3 (2 throttled + 1)", n)
	}
}

func TestGetListDeleteAndOutOfBandTermination(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	a, err := w.provider.Create(ctx, claim("a", req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.provider.Create(ctx, claim("b", req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	w.aws.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2a", Tags: map[string]string{"kubernetes.io/cluster/other": "owned", "karpenter.sh/nodepool": "x"}})
	w.aws.PageSize = 1
	list, err := w.provider.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a,b" {
		t.Errorf("List = %v, want this cluster's a and b only", names)
	}
	if err := w.provider.Delete(ctx, a); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if err := w.provider.Delete(ctx, a); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete = %v, want NotFound", err)
	}
	if _, err := w.provider.Get(ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a terminated instance = %v, want NotFound", err)
	}
	id := b.Status.ProviderID[strings.LastIndex(b.Status.ProviderID, "/")+1:]
	w.aws.TerminateOutOfBand(id)
	// Get answers from the cluster's instance cache: an out-of-band termination shows once it refreshes.
	w.clock.Step(time.Minute)
	if _, err := w.provider.Get(ctx, b.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after out-of-band termination = %v, want NotFound", err)
	}
}

func TestDeletesShareOneTerminateCall(t *testing.T) {
	w := newWorld(t)
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	var claims []*v1.NodeClaim
	for _, n := range []string{"x1", "x2", "x3"} {
		c, err := w.provider.Create(ctx, claim(n, req(v1.CapacityTypeLabelKey, "In", "on-demand")))
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	errs := make(chan error, len(claims))
	for _, c := range claims {
		go func() { errs <- w.provider.Delete(ctx, c) }()
	}
	for range claims {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	calls := w.aws.Calls("TerminateInstances")
	if len(calls) != 1 || len(calls[0].Params["InstanceId.3"]) != 1 {
		t.Errorf("TerminateInstances calls = %d (want 1 carrying all 3 ids)", len(calls))
	}
}

func TestPricingAPIRefreshesOnDemandPrices(t *testing.T) {
	w := newWorld(t)
	w.aws.PageSize = 1
	w.aws.AddProduct("m5.large", 0.1)
	w.aws.AddProduct("c5.large", 0.09)
	if err := w.provider.Prices().Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, _ := w.provider.Prices().OnDemand("m5.large"); p != 0.1 {
		t.Errorf("m5.large on-demand = %v, want the Pricing API's 0.1 (embedded is 0.096)", p)
	}
	if n := len(w.aws.Calls("GetProducts")); n < 2 {
		t.Errorf("GetProducts calls = %d, want paginated", n)
	}
	if f := w.aws.Calls("GetProducts")[0].Body["Filters"]; !strings.Contains(toString(f), "us-west-2") {
		t.Errorf("GetProducts filters %v do not name the region", f)
	}
}

func overridesOf(p url.Values) []string {
	var out []string
	for k, v := range p {
		if strings.HasPrefix(k, "LaunchTemplateConfigs.") && strings.HasSuffix(k, ".InstanceType") {
			sub := strings.TrimSuffix(k, ".InstanceType")
			out = append(out, v[0]+"@"+p.Get(sub+".SubnetId"))
		}
	}
	sort.Strings(out)
	return out
}

func instanceTags(p url.Values) map[string]string {
	out := map[string]string{}
	for i := 1; p.Get(key("TagSpecification", i, "ResourceType")) != ""; i++ {
		if p.Get(key("TagSpecification", i, "ResourceType")) != "instance" {
			continue
		}
		for j := 1; p.Get(key("TagSpecification", i, key("Tag", j, "Key"))) != ""; j++ {
			out[p.Get(key("TagSpecification", i, key("Tag", j, "Key")))] = p.Get(key("TagSpecification", i, key("Tag", j, "Value")))
		}
	}
	return out
}

func TestDeletedNodeClassCleansUpOnceUnused(t *testing.T) {
	w := newWorld(t)
	w.aws.AddRole("KarpenterNodeRole-prod")
	nc := nodeClass("default")
	nc.Spec.InstanceProfile, nc.Spec.Role = nil, "KarpenterNodeRole-prod"
	w.apply(t, nc)
	ctx := context.Background()
	c := claim("in-use", req(v1.CapacityTypeLabelKey, "In", "on-demand"))
	if _, err := w.provider.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := w.kube.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	stored := &awsv1.EC2NodeClass{}
	if err := w.kube.Get(ctx, clientKey("default"), stored); err != nil {
		t.Fatal(err)
	}
	if err := w.kube.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	w.reconcile(t, "default")
	if len(w.aws.LaunchTemplates()) != 2 || len(w.aws.InstanceProfiles()) != 1 { // one template per AMI (amd64, arm64)
		t.Fatalf("cleaned up while a NodeClaim uses the NodeClass: %d templates, %d profiles", len(w.aws.LaunchTemplates()), len(w.aws.InstanceProfiles()))
	}
	if err := w.kube.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := w.nodeClasses.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	if n, p := len(w.aws.LaunchTemplates()), len(w.aws.InstanceProfiles()); n != 0 || p != 0 {
		t.Errorf("after the last claim went: %d launch templates, %d instance profiles left", n, p)
	}
	if err := w.kube.Get(ctx, clientKey("default"), &awsv1.EC2NodeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("EC2NodeClass still there: %v", err)
	}
}
