// Package awsstack runs Joist's controllers with the AWS provider against a real kube-apiserver
// (envtest) and the HTTP-level AWS fake: a pending pod leads to a CreateFleet, and a Node the test
// registers as the kubelet would (named after the instance's private DNS name, not the claim) is
// matched to its claim by provider ID.
package awsstack

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/cloudprovider/aws/interruption"
	"github.com/joist-dev/joist/cloudprovider/aws/tagging"
	"github.com/joist-dev/joist/controllers"
	"github.com/joist-dev/joist/controllers/ec2nodeclass"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/test/env"
)

func TestMain(m *testing.M) {
	if os.Getenv("JOIST_TEST_LOGS") == "" {
		env.DiscardLogs()
	} else {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	os.Exit(m.Run())
}

// withControllers is the AWS provider as cmd/joist wires it: sharing its unavailable cache and
// bringing the EC2NodeClass controller.
type withControllers struct {
	*awsprovider.CloudProvider
}

func (w withControllers) RegisterControllers(_ context.Context, mgr manager.Manager) error {
	c := w.Clients()
	w.UseEventRecorder(mgr.GetEventRecorder("joist"))
	poller := interruption.New(mgr.GetClient(), c.SQS, w.UnavailableOfferings(), mgr.GetEventRecorder("joist"),
		interruption.Options{Queue: queue, WaitTime: time.Second})
	if err := mgr.Add(poller); err != nil {
		return err
	}
	if err := tagging.New(mgr.GetClient(), c.EC2).Register(mgr); err != nil {
		return err
	}
	return ec2nodeclass.New(mgr.GetClient(), c.EC2, c.SSM, c.IAM, ec2nodeclass.Options{ClusterName: "prod", Region: c.Region,
		KubernetesVersion: func(context.Context) (string, error) { return fake.KubernetesVersion, nil },
	}).Register(mgr)
}

// queue is the interruption queue as docs/aws.md names it (joist-<cluster>), which its policy allows.
const queue = "joist-prod"

// Karpenter's getting-started EC2NodeClass, with an instance profile instead of a role.
const nodeClassManifest = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]`

// Karpenter's getting-started NodePool, with a limit for the guardrails.
const manifests = nodeClassManifest + `
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  limits: {cpu: "100"}
`

func TestPendingPodLaunchesAnEC2InstanceItsNodeRegistersAndRetires(t *testing.T) {
	st := startStack(t, manifests, nil)
	kube, aws, ctx := st.kube, st.aws, st.ctx

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}},
	}
	st.createPending(t, pod)

	var claim v1.NodeClaim
	eventually(t, ctx, "a NodeClaim launched through CreateFleet", func() (bool, string) {
		list := &v1.NodeClaimList{}
		if err := kube.List(ctx, list); err != nil {
			return false, err.Error()
		}
		for _, nc := range list.Items {
			if nc.IsTrue(v1.ConditionTypeLaunched) {
				claim = nc
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d claims, fleets %d, denied %v", len(list.Items), len(aws.Calls("CreateFleet")), aws.Denials())
	})
	fleets := aws.Calls("CreateFleet")
	if len(fleets) != 1 {
		t.Fatalf("CreateFleet calls = %d, want 1", len(fleets))
	}
	for k, v := range fleets[0].Params {
		if strings.HasSuffix(k, ".InstanceType") && !strings.HasPrefix(v[0], "c5.") && !strings.HasPrefix(v[0], "m5.") {
			t.Errorf("fleet override %s = %s: the NodePool allows c and m of generation > 4 only", k, v[0])
		}
	}
	insts := aws.Instances()
	if len(insts) != 1 {
		t.Fatalf("instances = %d, want 1", len(insts))
	}
	inst := insts[0]
	if !strings.HasSuffix(claim.Status.ProviderID, "/"+inst.ID) || inst.Tags["karpenter.sh/nodeclaim"] != claim.Name {
		t.Fatalf("claim %s providerID %s, instance %s tagged %v", claim.Name, claim.Status.ProviderID, inst.ID, inst.Tags)
	}
	if cpu := claim.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("3")) < 0 {
		t.Errorf("launched %s with allocatable cpu %s for a 3-cpu pod", inst.InstanceType, cpu.String())
	}

	// The kubelet registers the node under the instance's private DNS name, with the provider ID and
	// the unregistered taint from its user data.
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: inst.PrivateDNSName, Labels: map[string]string{
			v1.NodePoolLabelKey: "default", v1.CapacityTypeLabelKey: "on-demand", corev1.LabelHostname: inst.PrivateDNSName}},
		Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
	}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Joist patches the node as soon as it sees it: re-read on conflict, as the kubelet would.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{
			Capacity: claim.Status.Capacity, Allocatable: claim.Status.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		return kube.Status().Update(ctx, n)
	}); err != nil {
		t.Fatal(err)
	}
	// The apiserver's TaintNodesByCondition admission adds node.kubernetes.io/not-ready on create;
	// with no kube-controller-manager here, the test lifts it as its node lifecycle controller would.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, taint := range n.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		n.Spec.Taints = kept
		return kube.Update(ctx, n)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the claim registered and initialized on the node", func() (bool, string) {
		nc := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: claim.Name}, nc); err != nil {
			return false, err.Error()
		}
		return nc.IsTrue(v1.ConditionTypeInitialized) && nc.Status.NodeName == inst.PrivateDNSName, fmt.Sprintf("nodeName %q, conditions %+v", nc.Status.NodeName, nc.Status.Conditions)
	})
	got := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: inst.PrivateDNSName}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != inst.InstanceType || got.Labels["karpenter.k8s.aws/instance-family"] == "" {
		t.Errorf("node labels %v lack the claim's instance labels", got.Labels)
	}
	pinned := false
	for _, taint := range got.Spec.Taints {
		if taint.Key == v1.UnregisteredTaintKey {
			t.Errorf("node still carries %s", taint.Key)
		}
		pinned = pinned || (taint.Key == nomination.PinTaintKey && taint.Value == claim.Name && taint.Effect == corev1.TaintEffectNoSchedule)
	}
	// No kube-scheduler runs here, so the pod stays pending and the release's pin holds the node for it
	// (--pin-planned-pods, the default): the node's taint and the pod's toleration name the claim.
	if !pinned {
		t.Errorf("node taints %v lack the pin %s=%s:NoSchedule", got.Spec.Taints, nomination.PinTaintKey, claim.Name)
	}
	pending := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pending); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pending.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == nomination.PinTaintKey && tol.Operator == corev1.TolerationOpEqual && tol.Value == claim.Name
	}) {
		t.Errorf("pod tolerations %v lack the claim's pin %s=%s", pending.Spec.Tolerations, nomination.PinTaintKey, claim.Name)
	}
	if pending.Status.NominatedNodeName != "" {
		t.Errorf("pod nominated to %q, want no nomination (pinned instead)", pending.Status.NominatedNodeName)
	}

	eventually(t, ctx, "the instance named after its node", func() (bool, string) {
		for _, i := range aws.Instances() {
			if i.ID == inst.ID {
				return i.Tags["Name"] == inst.PrivateDNSName, "Name=" + i.Tags["Name"]
			}
		}
		return false, "instance gone"
	})

	// AWS Health schedules the instance's retirement: the claim is deleted, the node drained and
	// deleted, and the instance terminated through the termination path.
	aws.SendMessage(queue, `{"version":"0","id":"1","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-12-01T10:00:00Z","region":"us-west-2","resources":[],"detail":{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[{"entityValue":"`+inst.ID+`"}]}}`)
	eventually(t, ctx, "the retiring instance terminated and its claim and node gone", func() (bool, string) {
		state := ""
		for _, i := range aws.Instances() {
			if i.ID == inst.ID {
				state = i.State
			}
		}
		claimErr := kube.Get(ctx, client.ObjectKey{Name: claim.Name}, &v1.NodeClaim{})
		nodeErr := kube.Get(ctx, client.ObjectKey{Name: inst.PrivateDNSName}, &corev1.Node{})
		return state == "terminated" && apierrors.IsNotFound(claimErr) && apierrors.IsNotFound(nodeErr),
			fmt.Sprintf("instance %s, claim %v, node %v, queue %d", state, claimErr, nodeErr, aws.QueueLength(queue))
	})
	assertNoDenials(t, aws)
}

// stack is the manager with the AWS provider, running against envtest and the fake.
type stack struct {
	kube client.Client
	aws  *fake.Server
	ctx  context.Context
}

// startStack starts the fake (prepare adjusts it first) under docs/aws.md's policy with a 3 s
// describe lag, the manager with every controller, applies manifests and waits for the
// EC2NodeClass "default" to be Ready. Everything stops when the test ends.
func startStack(t *testing.T, manifests string, prepare func(*fake.Server)) *stack {
	t.Helper()
	scheme := env.DefaultScheme()
	if err := awsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	e := env.New(t, env.Options{Scheme: scheme})
	kube := e.Client
	aws := fake.NewStandard("prod")
	t.Cleanup(aws.Close)
	if prepare != nil {
		prepare(aws)
	}
	// The controller's role holds docs/aws.md's policy, parsed out of the document; EC2 is
	// eventually consistent: instances show in DescribeInstances 3 s after CreateFleet.
	md, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := fake.PolicyFromMarkdown(md, "Controller IAM policy", map[string]string{"REGION": "us-west-2", "ACCOUNT": fake.Account, "CLUSTER": "prod"})
	if err != nil {
		t.Fatalf("docs/aws.md's controller policy: %v", err)
	}
	aws.SetPolicy(policy)
	aws.SetDescribeLag(3 * time.Second)
	aws.CreateQueue(queue)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	clients, err := aws.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}

	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme: scheme, Cache: controllers.CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	unavailable := cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0)
	provider := awsprovider.New(mgr.GetClient(), clients, unavailable, clock.RealClock{}, awsprovider.Options{
		ClusterName: "prod", ClusterEndpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", ClusterCABundle: "Q0E=",
	})
	if err := provider.Prices().Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := controllers.Register(ctx, mgr, withControllers{provider}, clock.RealClock{}, controllers.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { stop(); <-done })

	for _, doc := range strings.Split(manifests, "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		u := unstructuredFrom(obj)
		if err := kube.Create(ctx, u); err != nil {
			t.Fatalf("applying %s: %v", u.GetKind(), err)
		}
	}
	eventually(t, ctx, "EC2NodeClass default Ready", func() (bool, string) {
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return false, err.Error()
		}
		return nc.IsTrue(awsv1.ConditionTypeReady), fmt.Sprintf("%+v", nc.Status.Conditions)
	})
	return &stack{kube: kube, aws: aws, ctx: ctx}
}

// createPending creates pod and marks it unschedulable, as the kube-scheduler (absent here) would.
func (st *stack) createPending(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := st.kube.Create(st.ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := st.kube.Status().Update(st.ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func assertNoDenials(t *testing.T, aws *fake.Server) {
	t.Helper()
	if d := aws.Denials(); len(d) > 0 {
		t.Errorf("calls docs/aws.md's policy does not allow: %v", d)
	}
}

func eventually(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		ok, detail := cond()
		last = detail
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}
