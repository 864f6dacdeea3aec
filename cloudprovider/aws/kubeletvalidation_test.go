package aws

import (
	"fmt"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
)

// kubeletRefuses runs the kubelet's own start-up checks on a KubeletConfiguration, as the kubelet
// does after reading its config file (k8s.io/kubernetes, test-only): the v1beta1 defaults, the
// conversion to the internal type, ValidateKubeletConfiguration with the default feature gates,
// and the eviction thresholds parsed as the kubelet parses them (every soft threshold needs a grace
// period; signals and quantities must parse).
func kubeletRefuses(kc kubeletv1beta1.KubeletConfiguration) error {
	scheme, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return err
	}
	versioned := kc.DeepCopy()
	scheme.Default(versioned)
	internal := &kubeletconfig.KubeletConfiguration{}
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		return fmt.Errorf("converting: %w", err)
	}
	if kc.FailCgroupV1 == nil {
		// Left to its default (true), the check reads the cgroup version of the machine running
		// this test, not the node's: AL2023 nodes run cgroup v2.
		internal.FailCgroupV1 = false
	}
	if err := kubeletvalidation.ValidateKubeletConfiguration(internal, utilfeature.DefaultFeatureGate); err != nil {
		return err
	}
	_, err = eviction.ParseThresholdConfig(internal.EnforceNodeAllocatable, internal.EvictionHard, internal.EvictionSoft,
		internal.EvictionSoftGracePeriod, internal.EvictionMinimumReclaim)
	return err
}

// The kubelet's validation is really applied: configurations it refuses are refused here, with its
// own messages.
func TestKubeletValidationRefusesWhatTheKubeletRefuses(t *testing.T) {
	ptr := func(v int32) *int32 { return &v }
	for _, c := range []struct {
		name string
		kc   kubeletv1beta1.KubeletConfiguration
		want string // "" = accepted
	}{
		{"nodeadm's defaults", kubeletv1beta1.KubeletConfiguration{ClusterDNS: []string{"10.100.0.10"}}, ""},
		{"image GC low above high", kubeletv1beta1.KubeletConfiguration{ImageGCHighThresholdPercent: ptr(60), ImageGCLowThresholdPercent: ptr(80)}, "imageGCLowThresholdPercent"},
		{"negative maxPods", kubeletv1beta1.KubeletConfiguration{MaxPods: -1}, "maxPods"},
		{"soft eviction without grace period", kubeletv1beta1.KubeletConfiguration{EvictionSoft: map[string]string{"memory.available": "1Gi"}}, "grace period must be specified"},
		{"unknown eviction signal", kubeletv1beta1.KubeletConfiguration{EvictionHard: map[string]string{"cpu.available": "10%"}}, "cpu.available"},
		{"eviction threshold not a quantity", kubeletv1beta1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "lots"}}, "quantities must match"},
	} {
		err := kubeletRefuses(c.kc)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
	}
}
