package aksnodeclass

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	corev1 "k8s.io/api/core/v1"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
)

// The AKS node images' public community galleries.
const (
	UbuntuGallery     = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
	AzureLinuxGallery = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
)

// imageDefinition is one AKS node image definition and the sizes it boots.
type imageDefinition struct {
	gallery, name, arch, generation string
}

// definitions are the image definitions of a family, in order of preference (Gen2 first).
// Ubuntu means Ubuntu 22.04; AzureLinux means Azure Linux 3.
func definitions(family string) []imageDefinition {
	switch family {
	case azv1beta1.ImageFamilyAzureLinux:
		return []imageDefinition{
			{AzureLinuxGallery, "V3gen2", "amd64", "2"}, {AzureLinuxGallery, "V3", "amd64", "1"}, {AzureLinuxGallery, "V3gen2arm64", "arm64", "2"},
		}
	case azv1beta1.ImageFamilyUbuntu2404:
		return []imageDefinition{
			{UbuntuGallery, "2404gen2containerd", "amd64", "2"}, {UbuntuGallery, "2404containerd", "amd64", "1"}, {UbuntuGallery, "2404gen2arm64containerd", "arm64", "2"},
		}
	}
	return []imageDefinition{
		{UbuntuGallery, "2204gen2containerd", "amd64", "2"}, {UbuntuGallery, "2204containerd", "amd64", "1"}, {UbuntuGallery, "2204gen2arm64containerd", "arm64", "2"},
	}
}

// latestVersion is the newest version of a community gallery image definition in the location.
func latestVersion(ctx context.Context, c *armcompute.CommunityGalleryImageVersionsClient, location string, d imageDefinition) (string, error) {
	var best string
	pager := c.NewListPager(location, d.gallery, d.name, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("listing versions of %s/%s: %w", d.gallery, d.name, err)
		}
		for _, v := range page.Value {
			if v == nil || v.Name == nil {
				continue
			}
			if v.Properties != nil && v.Properties.ExcludeFromLatest != nil && *v.Properties.ExcludeFromLatest {
				continue
			}
			if best == "" || newer(*v.Name, best) {
				best = str(v.Name)
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no version of %s/%s in %s", d.gallery, d.name, location)
	}
	return best, nil
}

// newer compares dotted numeric versions (202508.20.0).
func newer(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x > y
		}
	}
	return len(as) > len(bs)
}

// resolveImages returns the class's node images: the latest version of each definition of its
// family, with the requirements a size meets to boot it.
func resolveImages(ctx context.Context, c *armcompute.CommunityGalleryImageVersionsClient, location string, nc *azv1beta1.AKSNodeClass) ([]azv1beta1.NodeImage, error) {
	var out []azv1beta1.NodeImage
	for _, d := range definitions(nc.ImageFamily()) {
		version, err := latestVersion(ctx, c, location, d)
		if err != nil {
			return nil, err
		}
		out = append(out, azv1beta1.NodeImage{
			ID: fmt.Sprintf("/CommunityGalleries/%s/images/%s/versions/%s", d.gallery, d.name, version),
			Requirements: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{d.arch}},
				{Key: azv1beta1.LabelSKUHyperVGeneration, Operator: corev1.NodeSelectorOpIn, Values: []string{d.generation}},
			},
		})
	}
	return out, nil
}
