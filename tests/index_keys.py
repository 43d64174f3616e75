"""numpy index keys that exercise a backend's index plan (advanced-block placement, ints among
index arrays, new axes, negative steps and indices, duplicates), for an array of shape (4, 5, 6).
The cuda tests run this file's source in the stand-in's subprocess; the wgpu tests import it."""
import numpy as np

I1 = np.array([[0, 3], [-1, 2]])
I2 = np.array([1, 4])
KEYS = [
    (I1,),                                            # advanced first dim, 2-d index
    (slice(None), I2),                                # after a slice: B stays in place
    (I2 - 1, slice(1, 4), I2),                        # separated by a slice: B goes first
    (Ellipsis, np.array([5, 0, 5])),                  # duplicates, through an ellipsis
    (0, slice(None), np.array([5, 0])),               # an int counts as advanced: B goes first
    (I1, None, 1),                                    # new axis between
    (slice(None, None, -1), I2[:, None], slice(0, 6, 2)),   # negative step, broadcast index
    (I2 - 2, I2),                                     # two arrays, negative index
    (np.array([1, 1, 2]),),                           # duplicates: index_add accumulates
    (slice(1, 3), np.array([2, 2, 2]), 3),
    (np.array([3, -4, 3]), slice(4, 1, -2), np.array([[0], [5]])),
]
