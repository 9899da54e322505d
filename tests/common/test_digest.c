/* common's digests: SHA-256 and HMAC-SHA256 (one-shot and keyed object)
 * against RFC 4231 / FIPS 180-2 vectors, and the keyed object against the
 * one-shot form for keys of every length around the block size. */
#include <string.h>

#include "common/common.h"
#include "tests/check.h"

int main(void)
{
    char hex[65];
    tftap_sha256_hex("abc", 3, hex);
    CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    tftap_sha256_hex("", 0, hex);
    CHECK_STR_EQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    /* RFC 4231 test case 1 (20-byte key) and 6 (131-byte key: hashed first). */
    unsigned char k1[20], k6[131];
    memset(k1, 0x0b, sizeof k1);
    memset(k6, 0xaa, sizeof k6);
    const char *d6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    tftap_hmac *h = tftap_hmac_new(k1, sizeof k1);
    CHECK(h != NULL);
    CHECK_INT_EQ(tftap_hmac_hex(h, "Hi There", 8, hex), 0);
    CHECK_STR_EQ(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    /* The object is reusable: the same value, the same digits. */
    CHECK_INT_EQ(tftap_hmac_hex(h, "Hi There", 8, hex), 0);
    CHECK_STR_EQ(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    tftap_hmac_free(h);
    h = tftap_hmac_new(k6, sizeof k6);
    CHECK_INT_EQ(tftap_hmac_hex(h, d6, strlen(d6), hex), 0);
    CHECK_STR_EQ(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    tftap_hmac_free(h);
    tftap_hmac_sha256_hex(k6, sizeof k6, d6, strlen(d6), hex);
    CHECK_STR_EQ(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    /* Keys of 0..130 bytes and values of 0..200 bytes: as the one-shot. */
    unsigned char key[131], val[201];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (unsigned char)(i * 13 + 5);
    int same = 1;
    for (size_t kl = 0; kl <= sizeof key; kl += 13) {
        h = tftap_hmac_new(key, kl);
        for (size_t vl = 0; vl < sizeof val; vl += 17) {
            char want[65];
            tftap_hmac_sha256_hex(key, kl, val, vl, want);
            if (!h || tftap_hmac_hex(h, val, vl, hex) != 0 || strcmp(hex, want) != 0)
                same = 0;
        }
        tftap_hmac_free(h);
    }
    CHECK(same);
    tftap_hmac_free(NULL);
    return check_report("test_digest");
}
