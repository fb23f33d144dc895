// The source address failed authentications count against (src/auth/ratelimit.ts `sourceAddress`),
// in workerd: the module belongs to the Worker.
import { describe, expect, it } from "vitest";
import { sourceAddress } from "../../src/auth/ratelimit.ts";

const at = (address?: string) => sourceAddress(new Request("https://hub.test/", { headers: address === undefined ? {} : { "cf-connecting-ip": address } }));

describe("sourceAddress", () => {
  it("is CF-Connecting-IP for an IPv4 client", () => {
    expect(at("203.0.113.7")).toBe("203.0.113.7");
    expect(at(" 203.0.113.7 ")).toBe("203.0.113.7");
  });

  it("counts an IPv6 client by its /64, however the address is written", () => {
    expect(at("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(at("2001:0db8:0001:0002:ffff:ffff:ffff:fffe")).toBe("2001:db8:1:2::/64");
    expect(at("2001:DB8:1:2:0:0:0:99")).toBe("2001:db8:1:2::/64");
    expect(at("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(at("::1")).toBe("::/64");
  });

  it("counts an IPv4-mapped IPv6 address as its IPv4 address", () => {
    expect(at("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("is 'unknown' without the header, and the header as sent when it is no address", () => {
    expect(at()).toBe("unknown");
    expect(at("")).toBe("unknown");
    expect(at("not:an:address")).toBe("not:an:address");
  });
});
