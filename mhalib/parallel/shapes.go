package parallel

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

func shapesOf(dtype dtypes.DType, dims ...int) shapes.Shape { return shapes.Make(dtype, dims...) }
