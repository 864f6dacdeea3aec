package benchdata

import (
	"github.com/joist-dev/joist/catalog"
)

// CatalogInstanceTypes are the instance types of the uniform and mixed shapes: Joist's embedded
// default catalog (see docs/catalog.md), fresh copies on every call.
func CatalogInstanceTypes() []*catalog.InstanceType {
	return catalog.Default()
}
