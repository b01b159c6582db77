// kern/smp.h: start the application processors listed in the MADT.
#pragma once
#include <stdint.h>

void smp_init();   // boot CPU: INIT-SIPI-SIPI each AP, wait until it is online
