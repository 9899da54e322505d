/* A shared object holding none of libpq's or libmicrohttpd's symbols:
 * tests/cli/libs.sh puts it first on LD_LIBRARY_PATH under their sonames,
 * to see what a user with an unusable library is told. */
int tftap_test_stub(void);

int tftap_test_stub(void)
{
    return 0;
}
