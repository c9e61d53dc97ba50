/* icl.h compiles as strict C99 and as C++ (tests/tests/ffi_install.rs builds this file both ways
 * with -Wall -Wextra -Werror -pedantic) and its constants have their documented values. */
#include <icl.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    icl_config *cfg = NULL;
    icl_dims dims;
    double eta = 0.0;
    memset(&dims, 0, sizeof dims);
    if (ICL_OK != 0 || ICL_DOMAIN_TRAIN != 0 || ICL_DOMAIN_EVAL != 1) return 1;
    if (icl_config_preset("quick", &cfg) != ICL_OK) return 2;
    icl_config_free(cfg);
    if (icl_config_preset("nope", &cfg) != ICL_ERR_UNKNOWN_NAME || cfg != NULL) return 3;
    if (icl_theory_value("eta-star", NULL, NULL, 0, &eta, 1, NULL) != ICL_OK) return 4;
    printf("icl %s eta* %.17g default engine %s\n", icl_version(), eta, icl_default_engine());
    return 0;
}
