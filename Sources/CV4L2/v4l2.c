#include "CV4L2.h"
