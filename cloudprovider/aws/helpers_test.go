package aws_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"time"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/controllers/ec2nodeclass"
)

const cluster = "prod"

// world is the fake AWS account, a Kubernetes client holding the NodeClass, and the provider.
type world struct {
	aws         *fake.Server
	kube        client.Client
	clients     *awsprovider.Clients
	provider    *awsprovider.CloudProvider
	nodeClasses *ec2nodeclass.Controller
	unavailable *cloudprovider.UnavailableOfferings
	clock       *clocktesting.FakeClock
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := fake.NewStandard(cluster)
	t.Cleanup(s.Close)
	ctx := context.Background()
	clients, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	_ = awsv1.AddToScheme(scheme)
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&awsv1.EC2NodeClass{}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	unavailable := cloudprovider.NewUnavailableOfferings(clk, 0)
	w := &world{aws: s, kube: kube, clients: clients, unavailable: unavailable, clock: clk,
		provider: awsprovider.New(kube, clients, unavailable, clk, awsprovider.Options{
			ClusterName: cluster, ClusterEndpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", ClusterCABundle: "Q0E=",
		}),
		nodeClasses: ec2nodeclass.New(kube, clients.EC2, clients.SSM, clients.IAM, ec2nodeclass.Options{ClusterName: cluster, Region: clients.Region,
			KubernetesVersion: func(context.Context) (string, error) { return fake.KubernetesVersion, nil },
		}),
	}
	if err := w.provider.Prices().Refresh(ctx); err != nil {
		t.Fatalf("refreshing prices: %v", err)
	}
	return w
}

// nodeClass is the EC2NodeClass of Karpenter's getting-started guide.
func nodeClass(name string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			InstanceProfile:            ptr.To("KarpenterNodeInstanceProfile-" + cluster),
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			Tags:                       map[string]string{"team": "platform"},
		},
	}
}

// apply creates the NodeClass and reconciles it once; it returns the NodeClass as stored.
func (w *world) apply(t *testing.T, nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if err := w.kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	return w.reconcile(t, nc.Name)
}

func (w *world) reconcile(t *testing.T, name string) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if _, err := w.nodeClasses.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatalf("reconciling EC2NodeClass %s: %v", name, err)
	}
	out := &awsv1.EC2NodeClass{}
	if err := w.kube.Get(ctx, client.ObjectKey{Name: name}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// claim is a NodeClaim of NodePool "default" with the given requirements.
func claim(name string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = reqs
	return nc
}

func req(key string, op string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOperator(op), Values: values}
}

func ptrTo[T any](v T) *T { return &v }

func key(prefix string, i int, rest string) string {
	return prefix + "." + strconv.Itoa(i) + "." + rest
}

func decode(t *testing.T, b64 string) string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("user data is not base64: %v", err)
	}
	return string(data)
}

func toString(v any) string { return fmt.Sprint(v) }

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
