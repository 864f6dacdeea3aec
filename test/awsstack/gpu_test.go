package awsstack

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

// One NodePool of g5 and m5 types on the AL2023 alias.
const gpuManifests = nodeClassManifest + `
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
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, m5]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  limits: {cpu: "100"}
`

// The AL2023 NVIDIA image of the fixture's Kubernetes version, published in SSM as EKS does.
const al2023NVIDIA = "ami-0a1023nvidia"

// A pending GPU pod and a plain pod, one pool: the g5 boots the NVIDIA AMI and the m5 the standard
// one, each through its own launch template.
func TestGPUAndPlainPodsInOnePoolBootTheirOwnAMIs(t *testing.T) {
	st := startStack(t, gpuManifests, func(aws *fake.Server) {
		aws.AddInstanceType("g5.xlarge", "us-west-2a", "us-west-2b", "us-west-2c")
		aws.AddImage(fake.Image{ID: al2023NVIDIA, Name: "amazon-eks-node-al2023-x86_64-nvidia-" + fake.KubernetesVersion + "-v20261101",
			Owner: "amazon", Arch: "x86_64", CreationDate: "2026-11-01T00:00:00.000Z"})
		aws.SetSSMParameter("/aws/service/eks/optimized-ami/"+fake.KubernetesVersion+"/amazon-linux-2023/x86_64/nvidia/recommended/image_id", al2023NVIDIA)
	})
	// 1 + 3 CPUs do not fit one g5.xlarge (3.92 allocatable): the plain pod needs a node of its own.
	gpu := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cuda", Image: "cuda", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		}}}},
	}
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		}}}},
	}
	st.createPending(t, gpu)
	st.createPending(t, plain)

	eventually(t, st.ctx, "two NodeClaims launched", func() (bool, string) {
		list := &v1.NodeClaimList{}
		if err := st.kube.List(st.ctx, list); err != nil {
			return false, err.Error()
		}
		launched := 0
		for _, nc := range list.Items {
			if nc.IsTrue(v1.ConditionTypeLaunched) {
				launched++
			}
		}
		return launched == 2, fmt.Sprintf("%d claims, %d launched, fleets %d, denied %v", len(list.Items), launched, len(st.aws.Calls("CreateFleet")), st.aws.Denials())
	})

	insts := st.aws.Instances()
	if len(insts) != 2 {
		t.Fatalf("instances = %d, want 2", len(insts))
	}
	byFamily := map[string]fake.Instance{}
	for _, inst := range insts {
		byFamily[strings.SplitN(inst.InstanceType, ".", 2)[0]] = inst
	}
	g5, m5 := byFamily["g5"], byFamily["m5"]
	if g5.ID == "" || m5.ID == "" {
		t.Fatalf("launched %v, want one g5 and one m5", insts)
	}
	if g5.ImageID != al2023NVIDIA {
		t.Errorf("%s booted %s, want the AL2023 NVIDIA image %s", g5.InstanceType, g5.ImageID, al2023NVIDIA)
	}
	if m5.ImageID != fake.AL2023AMD64 {
		t.Errorf("%s booted %s, want the AL2023 standard image %s", m5.InstanceType, m5.ImageID, fake.AL2023AMD64)
	}
	if g5.LaunchTemplate == "" || g5.LaunchTemplate == m5.LaunchTemplate {
		t.Errorf("launch templates g5 %q, m5 %q: want one per image", g5.LaunchTemplate, m5.LaunchTemplate)
	}
	images := map[string]string{}
	for _, lt := range st.aws.LaunchTemplates() {
		images[lt.Name] = lt.Data.Get("ImageId")
		images[lt.ID] = lt.Data.Get("ImageId")
	}
	if images[g5.LaunchTemplate] != al2023NVIDIA || images[m5.LaunchTemplate] != fake.AL2023AMD64 {
		t.Errorf("launch template images: g5's %q, m5's %q", images[g5.LaunchTemplate], images[m5.LaunchTemplate])
	}
	// A fleet may offer both families (the plain pod fits a g5 too), each under the launch
	// template of the image that serves it.
	for _, f := range st.aws.Calls("CreateFleet") {
		for k, v := range f.Params {
			cfg, rest, ok := strings.Cut(k, ".Overrides.")
			if !ok || !strings.HasSuffix(rest, ".InstanceType") {
				continue
			}
			image := images[f.Params.Get(cfg+".LaunchTemplateSpecification.LaunchTemplateName")]
			want := fake.AL2023AMD64
			if strings.HasPrefix(v[0], "g5.") {
				want = al2023NVIDIA
			}
			if image != want {
				t.Errorf("fleet override %s = %s under a launch template of image %q, want %s", k, v[0], image, want)
			}
		}
	}
	assertNoDenials(t, st.aws)
}
