/* analysis: rendering of failed calls, replacements carried out by an apply,
 * and map keys, on change rows built here (no database). */
#include <string.h>

#include "analysis/analysis.h"
#include "tests/check.h"

static const char schema[] = "{\"attributes\":["
                             "{\"name\":\"id\",\"type\":\"string\",\"computed\":true},"
                             "{\"name\":\"name\",\"type\":\"string\",\"optional\":true},"
                             "{\"name\":\"tags\",\"type\":[\"map\",\"number\"],\"optional\":true}"
                             "],\"block_types\":[]}";

static char *render(const store_change_row *c)
{
    tftap_buf b = TFTAP_BUF_INIT;
    CHECK_INT_EQ(analysis_render_change(c, 0, &b), 0);
    tftap_buf_cstr(&b);
    return tftap_buf_take(&b, NULL);
}

static enum analysis_action action(const store_change_row *c)
{
    enum analysis_action a = ANALYSIS_ACTION_NOOP;
    CHECK_INT_EQ(analysis_change_action(c, &a), 0);
    return a;
}

static int contains(const char *hay, const char *needle)
{
    if (hay && strstr(hay, needle))
        return 1;
    fprintf(stderr, "--- not found: %s\n--- in:\n%s---\n", needle, hay ? hay : "(null)");
    return 0;
}

/* An apply whose provider answered an error: what it attempted (prior ->
 * planned, its new state being null) with the diagnostic and its path. */
static void test_failed_create(void)
{
    store_change_row c = {
        .call_id = 12,
        .rpc = "ApplyResourceChange",
        .type_name = "test_thing",
        .address = "test_thing.boom",
        .prior = "null",
        .planned = "{\"id\":{\"$unknown\":{}},\"name\":\"x\",\"tags\":null}",
        .new_state = "null",
        .diagnostics = "[{\"severity\":\"ERROR\",\"summary\":\"apply failed\","
                       "\"detail\":\"it broke\",\"attribute\":{\"path\":\".name\"}}]",
        .has_status = 1,
        .status_code = 0,
        .block_schema = schema,
        .failed = 1,
        .status_name = "OK",
    };
    char *o = render(&c);
    CHECK(contains(o, "  # test_thing.boom failed to be created  [ApplyResourceChange]\n"
                      "  + resource \"test_thing\" \"boom\" {\n"));
    CHECK(contains(o, "      + name = \"x\"\n"));
    CHECK(contains(o, "  Error: apply failed (at .name)\n    it broke\n"));
    CHECK(!strstr(o, "the call failed"));
    CHECK_INT_EQ(action(&c), ANALYSIS_ACTION_CREATE);
    free(o);
}

/* A failed update: the provider handed back the prior state; the change
 * shown is the one planned. A failing status is named. */
static void test_failed_update_status(void)
{
    store_change_row c = {
        .call_id = 7,
        .rpc = "ApplyResourceChange",
        .type_name = "test_thing",
        .address = "test_thing.a",
        .prior = "{\"id\":\"t-1\",\"name\":\"x\",\"tags\":null}",
        .planned = "{\"id\":\"t-1\",\"name\":\"y\",\"tags\":null}",
        .new_state = "{\"id\":\"t-1\",\"name\":\"x\",\"tags\":null}",
        .has_status = 1,
        .status_code = 14,
        .block_schema = schema,
        .failed = 1,
        .status_name = "UNAVAILABLE",
        .status_message = "connection closed",
    };
    char *o = render(&c);
    CHECK(contains(o, "  # test_thing.a failed to be updated in-place  [ApplyResourceChange]\n"
                      "  ~ resource \"test_thing\" \"a\" {\n"));
    CHECK(contains(o, "      ~ name = \"x\" -> \"y\"\n"));
    CHECK(contains(o, "  # the call failed: UNAVAILABLE (connection closed)\n"));
    CHECK(!strstr(o, "status 14"));
    CHECK_INT_EQ(action(&c), ANALYSIS_ACTION_UPDATE);
    free(o);

    /* Never answered. */
    c.has_status = 0;
    c.new_state = NULL;
    c.in_flight = 1;
    c.status_name = NULL;
    o = render(&c);
    CHECK(contains(o, "  # no answer: the call was still in flight"));
    CHECK_INT_EQ(action(&c), ANALYSIS_ACTION_UPDATE);
    free(o);
}

/* A plan the provider refused: its planned state is null, the proposed
 * one says what was asked. */
static void test_failed_plan(void)
{
    store_change_row c = {
        .call_id = 3,
        .rpc = "PlanResourceChange",
        .type_name = "test_thing",
        .prior = "null",
        .proposed = "{\"id\":null,\"name\":\"z\",\"tags\":null}",
        .planned = "null",
        .address_note = "nothing read",
        .failed = 1,
        .block_schema = schema,
    };
    char *o = render(&c);
    CHECK(contains(o, "could not be planned for creation  [PlanResourceChange]\n"));
    CHECK(contains(o, "      + name = \"z\"\n"));
    CHECK_INT_EQ(action(&c), ANALYSIS_ACTION_CREATE);
    free(o);
}

/* The create half of a replacement an apply carried out reads as one
 * "-/+" from the object the other apply destroyed. */
static void test_replaced_by_apply(void)
{
    store_change_row c = {
        .call_id = 20,
        .rpc = "ApplyResourceChange",
        .type_name = "test_thing",
        .address = "test_thing.r",
        .prior = "null",
        .planned = "{\"id\":{\"$unknown\":{}},\"name\":\"new\",\"tags\":null}",
        .new_state = "{\"id\":\"t-2\",\"name\":\"new\",\"tags\":null}",
        .destroyed_prior = "{\"id\":\"t-1\",\"name\":\"old\",\"tags\":null}",
        .replace_call_id = 19,
        .block_schema = schema,
    };
    char *o = render(&c);
    CHECK(contains(o, "  # test_thing.r has been replaced  [ApplyResourceChange]\n"
                      "-/+ resource \"test_thing\" \"r\" {\n"));
    CHECK(contains(o, "      ~ id   = \"t-1\" -> \"t-2\"\n"));
    CHECK(contains(o, "      ~ name = \"old\" -> \"new\"\n"));
    CHECK_INT_EQ(action(&c), ANALYSIS_ACTION_REPLACE);
    free(o);
}

/* A map's keys in key order whatever order the provider sent them, in a
 * whole value and in a diff. */
static void test_map_keys_sorted(void)
{
    store_change_row c = {
        .call_id = 1,
        .rpc = "PlanResourceChange",
        .type_name = "test_thing",
        .address = "test_thing.m",
        .prior = "null",
        .planned = "{\"id\":\"i\",\"name\":\"n\",\"tags\":{\"zeta\":1,\"alpha\":2,\"mid\":3}}",
        .block_schema = schema,
    };
    char *o = render(&c);
    CHECK(contains(o, "      + tags = {\n"
                      "          + \"alpha\" = 2\n"
                      "          + \"mid\"   = 3\n"
                      "          + \"zeta\"  = 1\n"
                      "        }\n"));
    free(o);

    c.prior = "{\"id\":\"i\",\"name\":\"n\",\"tags\":{\"zeta\":1,\"beta\":2}}";
    c.planned = "{\"id\":\"i\",\"name\":\"n\",\"tags\":{\"zeta\":9,\"alpha\":2,\"beta\":5}}";
    o = render(&c);
    CHECK(contains(o, "          + \"alpha\" = 2\n"
                      "          ~ \"beta\"  = 2 -> 5\n"
                      "          ~ \"zeta\"  = 1 -> 9\n"));
    free(o);
}

int main(void)
{
    test_failed_create();
    test_failed_update_status();
    test_failed_plan();
    test_replaced_by_apply();
    test_map_keys_sorted();
    return check_report("test_render");
}
