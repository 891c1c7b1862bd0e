// Placeholder: V4L2 ioctl wrappers go here.
#include <stdint.h>
