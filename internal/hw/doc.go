// Package hw is the home of the datasheet facts the drivers and the device models share:
// register offsets, bit fields, descriptor layouts and device ids, one constant each, in
// the subpackages intelnic (what the 82576 and 82599 have in common), i82576, i82599
// and virtiospec. The subpackages hold numbers only, no behaviour: the device models in
// sim stay an independent implementation of what the hardware does with them, and
// QEMU's models (the guest tests) are the independent check on the numbers themselves.
package hw
