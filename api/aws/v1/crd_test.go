package v1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	"github.com/joist-dev/joist/test/env"
)

func docs(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(data, "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("parsing yaml: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// upstreamInvalid are example objects upstream's own CRDs reject as well, with the reason: the
// Windows example's nodeClassRef.group carries a version, which karpenter.sh's NodePool CRD
// (pattern ^[^/]*$) refuses upstream too.
var upstreamInvalid = map[string]string{
	"windows-custom-userdata.yaml/NodePool/windows2022": "spec.template.spec.nodeClassRef.group in body should match '^[^/]*$'",
}

const base = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: test}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
`

func TestEC2NodeClassCRD(t *testing.T) {
	scheme := env.DefaultScheme()
	_ = awsv1.AddToScheme(scheme)
	e := env.New(t, env.Options{Scheme: scheme})
	ctx := context.Background()

	t.Run("Karpenter's examples apply unchanged", func(t *testing.T) {
		files, err := filepath.Glob("testdata/karpenter-examples/*.yaml")
		if err != nil || len(files) < 20 {
			t.Fatalf("examples: %v, %v", files, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs := docs(t, string(data))
			for _, u := range objs {
				err := e.Client.Create(ctx, u)
				want := upstreamInvalid[filepath.Base(f)+"/"+u.GetKind()+"/"+u.GetName()]
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: %s %s = %v, want the rejection upstream's CRD gives (%s)", filepath.Base(f), u.GetKind(), u.GetName(), err, want)
				}
			}
			for _, u := range objs {
				_ = e.Client.Delete(ctx, u)
			}
		}
	})

	t.Run("defaults IMDSv2", func(t *testing.T) {
		u := docs(t, base)[0]
		u.SetName("defaults")
		if err := e.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		nc := &awsv1.EC2NodeClass{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "defaults"}, nc); err != nil {
			t.Fatal(err)
		}
		m := nc.Spec.MetadataOptions
		if m == nil || *m.HTTPTokens != "required" || *m.HTTPPutResponseHopLimit != 1 || *m.HTTPEndpoint != "enabled" {
			t.Errorf("metadataOptions = %+v, want IMDSv2 required with hop limit 1", m)
		}
	})

	for _, tc := range []struct {
		name, patch, want string
	}{
		{"empty subnets", `{"spec":{"subnetSelectorTerms":[]}}`, "subnetSelectorTerms cannot be empty"},
		{"subnet id with tags", `{"spec":{"subnetSelectorTerms":[{"id":"subnet-123","tags":{"a":"b"}}]}}`, "'id' is mutually exclusive"},
		{"empty security group term", `{"spec":{"securityGroupSelectorTerms":[{}]}}`, "expected at least one, got none, ['tags', 'id', 'name']"},
		{"alias with other terms", `{"spec":{"amiSelectorTerms":[{"alias":"al2023@latest"},{"id":"ami-123"}]}}`, "'alias' is mutually exclusive"},
		{"unknown alias family", `{"spec":{"amiSelectorTerms":[{"alias":"ubuntu@latest"}]}}`, "family is not supported"},
		{"pinned windows", `{"spec":{"amiSelectorTerms":[{"alias":"windows2022@v20240101"}]}}`, "windows families may only specify version 'latest'"},
		{"no amiFamily without alias", `{"spec":{"amiSelectorTerms":[{"id":"ami-123"}]}}`, "must specify amiFamily if amiSelectorTerms does not contain an alias"},
		{"wrong amiFamily for alias", `{"spec":{"amiFamily":"Bottlerocket"}}`, "amiFamily must be 'AL2023' or 'Custom'"},
		{"role and instance profile", `{"spec":{"instanceProfile":"p"}}`, "must specify exactly one of ['role', 'instanceProfile']"},
		{"restricted tag", `{"spec":{"tags":{"karpenter.sh/nodepool":"x"}}}`, "restricted tag matching karpenter.sh/nodepool"},
		{"cluster tag", `{"spec":{"tags":{"kubernetes.io/cluster/prod":"owned"}}}`, "restricted tag matching kubernetes.io/cluster/"},
		{"two root volumes", `{"spec":{"blockDeviceMappings":[{"rootVolume":true,"ebs":{"volumeSize":"20Gi"}},{"rootVolume":true,"ebs":{"volumeSize":"30Gi"}}]}}`, "must have only one blockDeviceMappings with rootVolume"},
		{"bad kubeReserved key", `{"spec":{"kubelet":{"kubeReserved":{"gpu":"1"}}}}`, "valid keys for kubeReserved"},
		{"evictionSoft without grace periods", `{"spec":{"kubelet":{"evictionSoft":{"memory.available":"500Mi"}}}}`, "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"},
		{"evictionSoft without its signal's grace period", `{"spec":{"kubelet":{"evictionSoft":{"memory.available":"500Mi"},"evictionSoftGracePeriod":{"nodefs.available":"1m"}}}}`, "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"},
		{"podsPerCore on a Bottlerocket alias", `{"spec":{"amiSelectorTerms":[{"alias":"bottlerocket@latest"}],"kubelet":{"podsPerCore":10}}}`, "kubelet.podsPerCore is not supported by Bottlerocket"},
		{"podsPerCore with amiFamily Bottlerocket", `{"spec":{"amiFamily":"Bottlerocket","amiSelectorTerms":[{"id":"ami-123"}],"kubelet":{"podsPerCore":10}}}`, "kubelet.podsPerCore is not supported by Bottlerocket"},
		{"two DNS addresses with AL2", `{"spec":{"amiSelectorTerms":[{"alias":"al2@latest"}],"kubelet":{"clusterDNS":["10.0.0.10","10.0.0.11"]}}}`, "kubelet.clusterDNS takes one address with AL2"},
		{"image GC thresholds", `{"spec":{"kubelet":{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":60}}}`, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"},
	} {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			u := docs(t, base)[0]
			u.SetName(strings.ReplaceAll(tc.name, " ", "-"))
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatal(err)
			}
			merge(u.Object, patch)
			err := e.Client.Create(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create = %v, want a rejection containing %q", err, tc.want)
			}
		})
	}
}

// merge overlays patch on obj (maps merge, everything else replaces).
func merge(obj, patch map[string]any) {
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			if om, ok := obj[k].(map[string]any); ok {
				merge(om, pm)
				continue
			}
		}
		obj[k] = v
	}
}
