//! Interface IDs, from the `uuid(...)` attribute of each interface in `corprof.idl` (IUnknown
//! and IClassFactory are COM's own).

use crate::types::GUID;

pub const IID_IUnknown: GUID = GUID::from_u128(0x00000000_0000_0000_C000_000000000046);
pub const IID_IClassFactory: GUID = GUID::from_u128(0x00000001_0000_0000_C000_000000000046);

pub const IID_ICorProfilerCallback: GUID = GUID::from_u128(0x176FBED1_A55C_4796_98CA_A9DA0EF883E7);
pub const IID_ICorProfilerCallback2: GUID = GUID::from_u128(0x8A8CC829_CCF2_49FE_BBAE_0F022228071A);
pub const IID_ICorProfilerCallback3: GUID = GUID::from_u128(0x4FD2ED52_7731_4B8D_9469_03D2CC3086C5);
pub const IID_ICorProfilerCallback4: GUID = GUID::from_u128(0x7B63B2E3_107D_4D48_B2F6_F61E229470D2);
pub const IID_ICorProfilerCallback5: GUID = GUID::from_u128(0x8DFBA405_8C9F_45F8_BFFA_83B14CEF78B5);
pub const IID_ICorProfilerCallback6: GUID = GUID::from_u128(0xFC13DF4B_4448_4F4F_950C_BA8D19D00C36);
pub const IID_ICorProfilerCallback7: GUID = GUID::from_u128(0xF76A2DBA_1D52_4539_866C_2AA518F9EFC3);
pub const IID_ICorProfilerCallback8: GUID = GUID::from_u128(0x5BED9B15_C079_4D47_BFE2_215A140C07E0);
pub const IID_ICorProfilerCallback9: GUID = GUID::from_u128(0x27583EC3_C8F5_482F_8052_194B8CE4705A);
pub const IID_ICorProfilerCallback10: GUID =
    GUID::from_u128(0xCEC5B60E_C69C_495F_87F6_84D28EE16FFB);
pub const IID_ICorProfilerCallback11: GUID =
    GUID::from_u128(0x42350846_AAED_47F7_B128_FD0C98881CDE);

pub const IID_ICorProfilerInfo: GUID = GUID::from_u128(0x28B5557D_3F3F_48B4_90B2_5F9EEA2F6C48);
pub const IID_ICorProfilerInfo2: GUID = GUID::from_u128(0xCC0935CD_A518_487D_B0BB_A93214E65478);
pub const IID_ICorProfilerInfo3: GUID = GUID::from_u128(0xB555ED4F_452A_4E54_8B39_B5360BAD32A0);
pub const IID_ICorProfilerInfo4: GUID = GUID::from_u128(0x0D8FDCAA_6257_47BF_B1BF_94DAC88466EE);
pub const IID_ICorProfilerInfo5: GUID = GUID::from_u128(0x07602928_CE38_4B83_81E7_74ADAF781214);
pub const IID_ICorProfilerInfo6: GUID = GUID::from_u128(0xF30A070D_BFFB_46A7_B1D8_8781EF7B698A);
pub const IID_ICorProfilerInfo7: GUID = GUID::from_u128(0x9AEECC0D_63E0_4187_8C00_E312F503F663);
pub const IID_ICorProfilerInfo8: GUID = GUID::from_u128(0xC5AC80A6_782E_4716_8044_39598C60CFBF);
pub const IID_ICorProfilerInfo9: GUID = GUID::from_u128(0x008170DB_F8CC_4796_9A51_DC8AA0B47012);
pub const IID_ICorProfilerInfo10: GUID = GUID::from_u128(0x2F1B5152_C869_40C9_AA5F_3ABE026BD720);
pub const IID_ICorProfilerInfo11: GUID = GUID::from_u128(0x06398876_8987_4154_B621_40A00D6E4D04);
pub const IID_ICorProfilerInfo12: GUID = GUID::from_u128(0x27B24CCD_1CB1_47C5_96EE_98190DC30959);
pub const IID_ICorProfilerInfo13: GUID = GUID::from_u128(0x6E6C7EE2_0701_4EC2_9D29_2E8733B66934);
pub const IID_ICorProfilerInfo14: GUID = GUID::from_u128(0xF460E352_D76D_4FE9_835F_F6AF9D6E862D);
pub const IID_ICorProfilerInfo15: GUID = GUID::from_u128(0xB446462D_BD22_41DD_872D_DC714C49EB56);

pub const IID_ICorProfilerObjectEnum: GUID =
    GUID::from_u128(0x2C6269BD_2D13_4321_AE12_6686365FD6AF);
pub const IID_ICorProfilerFunctionEnum: GUID =
    GUID::from_u128(0xFF71301A_B994_429D_A10B_B345A65280EF);
pub const IID_ICorProfilerModuleEnum: GUID =
    GUID::from_u128(0xB0266D75_2081_4493_AF7F_028BA34DB891);
pub const IID_IMethodMalloc: GUID = GUID::from_u128(0xA0EFB28B_6EE2_4D7B_B983_A75EF7BEEDB8);
pub const IID_ICorProfilerFunctionControl: GUID =
    GUID::from_u128(0xF0963021_E1EA_4732_8581_E01B0BD3C0C6);
pub const IID_ICorProfilerMethodEnum: GUID =
    GUID::from_u128(0xFCCEE788_0088_454B_A811_C99F298D1942);
pub const IID_ICorProfilerThreadEnum: GUID =
    GUID::from_u128(0x571194F7_25ED_419F_AA8B_7016B3159701);
pub const IID_ICorProfilerAssemblyReferenceProvider: GUID =
    GUID::from_u128(0x66A78C24_2EEF_4F65_B45F_DD1D8038BF3C);

/// Every IID above with its interface name, for lookups (e.g. naming the IID in a QI call).
pub const KNOWN_IIDS: &[(&str, GUID)] = &[
    ("IUnknown", IID_IUnknown),
    ("IClassFactory", IID_IClassFactory),
    ("ICorProfilerCallback", IID_ICorProfilerCallback),
    ("ICorProfilerCallback2", IID_ICorProfilerCallback2),
    ("ICorProfilerCallback3", IID_ICorProfilerCallback3),
    ("ICorProfilerCallback4", IID_ICorProfilerCallback4),
    ("ICorProfilerCallback5", IID_ICorProfilerCallback5),
    ("ICorProfilerCallback6", IID_ICorProfilerCallback6),
    ("ICorProfilerCallback7", IID_ICorProfilerCallback7),
    ("ICorProfilerCallback8", IID_ICorProfilerCallback8),
    ("ICorProfilerCallback9", IID_ICorProfilerCallback9),
    ("ICorProfilerCallback10", IID_ICorProfilerCallback10),
    ("ICorProfilerCallback11", IID_ICorProfilerCallback11),
    ("ICorProfilerInfo", IID_ICorProfilerInfo),
    ("ICorProfilerInfo2", IID_ICorProfilerInfo2),
    ("ICorProfilerInfo3", IID_ICorProfilerInfo3),
    ("ICorProfilerInfo4", IID_ICorProfilerInfo4),
    ("ICorProfilerInfo5", IID_ICorProfilerInfo5),
    ("ICorProfilerInfo6", IID_ICorProfilerInfo6),
    ("ICorProfilerInfo7", IID_ICorProfilerInfo7),
    ("ICorProfilerInfo8", IID_ICorProfilerInfo8),
    ("ICorProfilerInfo9", IID_ICorProfilerInfo9),
    ("ICorProfilerInfo10", IID_ICorProfilerInfo10),
    ("ICorProfilerInfo11", IID_ICorProfilerInfo11),
    ("ICorProfilerInfo12", IID_ICorProfilerInfo12),
    ("ICorProfilerInfo13", IID_ICorProfilerInfo13),
    ("ICorProfilerInfo14", IID_ICorProfilerInfo14),
    ("ICorProfilerInfo15", IID_ICorProfilerInfo15),
    ("ICorProfilerObjectEnum", IID_ICorProfilerObjectEnum),
    ("ICorProfilerFunctionEnum", IID_ICorProfilerFunctionEnum),
    ("ICorProfilerModuleEnum", IID_ICorProfilerModuleEnum),
    ("IMethodMalloc", IID_IMethodMalloc),
    (
        "ICorProfilerFunctionControl",
        IID_ICorProfilerFunctionControl,
    ),
    ("ICorProfilerMethodEnum", IID_ICorProfilerMethodEnum),
    ("ICorProfilerThreadEnum", IID_ICorProfilerThreadEnum),
    (
        "ICorProfilerAssemblyReferenceProvider",
        IID_ICorProfilerAssemblyReferenceProvider,
    ),
];

/// The name of a known interface ID, if any.
pub fn iid_name(iid: &GUID) -> Option<&'static str> {
    KNOWN_IIDS.iter().find(|(_, g)| g == iid).map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn g(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> GUID {
        GUID {
            data1: d1,
            data2: d2,
            data3: d3,
            data4: d4,
        }
    }

    /// The same IIDs typed a second time, in the field-by-field form MIDL emits for C
    /// (`{l, w1, w2, {b1..b8}}`), so a mistyped digit in either list fails here.
    #[test]
    fn iids_match_component_form() {
        let expected: &[(&str, GUID)] = &[
            (
                "IUnknown",
                g(
                    0x00000000,
                    0x0000,
                    0x0000,
                    [0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46],
                ),
            ),
            (
                "IClassFactory",
                g(
                    0x00000001,
                    0x0000,
                    0x0000,
                    [0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46],
                ),
            ),
            (
                "ICorProfilerCallback",
                g(
                    0x176FBED1,
                    0xA55C,
                    0x4796,
                    [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7],
                ),
            ),
            (
                "ICorProfilerCallback2",
                g(
                    0x8A8CC829,
                    0xCCF2,
                    0x49FE,
                    [0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A],
                ),
            ),
            (
                "ICorProfilerCallback3",
                g(
                    0x4FD2ED52,
                    0x7731,
                    0x4B8D,
                    [0x94, 0x69, 0x03, 0xD2, 0xCC, 0x30, 0x86, 0xC5],
                ),
            ),
            (
                "ICorProfilerCallback4",
                g(
                    0x7B63B2E3,
                    0x107D,
                    0x4D48,
                    [0xB2, 0xF6, 0xF6, 0x1E, 0x22, 0x94, 0x70, 0xD2],
                ),
            ),
            (
                "ICorProfilerCallback5",
                g(
                    0x8DFBA405,
                    0x8C9F,
                    0x45F8,
                    [0xBF, 0xFA, 0x83, 0xB1, 0x4C, 0xEF, 0x78, 0xB5],
                ),
            ),
            (
                "ICorProfilerCallback6",
                g(
                    0xFC13DF4B,
                    0x4448,
                    0x4F4F,
                    [0x95, 0x0C, 0xBA, 0x8D, 0x19, 0xD0, 0x0C, 0x36],
                ),
            ),
            (
                "ICorProfilerCallback7",
                g(
                    0xF76A2DBA,
                    0x1D52,
                    0x4539,
                    [0x86, 0x6C, 0x2A, 0xA5, 0x18, 0xF9, 0xEF, 0xC3],
                ),
            ),
            (
                "ICorProfilerCallback8",
                g(
                    0x5BED9B15,
                    0xC079,
                    0x4D47,
                    [0xBF, 0xE2, 0x21, 0x5A, 0x14, 0x0C, 0x07, 0xE0],
                ),
            ),
            (
                "ICorProfilerCallback9",
                g(
                    0x27583EC3,
                    0xC8F5,
                    0x482F,
                    [0x80, 0x52, 0x19, 0x4B, 0x8C, 0xE4, 0x70, 0x5A],
                ),
            ),
            (
                "ICorProfilerCallback10",
                g(
                    0xCEC5B60E,
                    0xC69C,
                    0x495F,
                    [0x87, 0xF6, 0x84, 0xD2, 0x8E, 0xE1, 0x6F, 0xFB],
                ),
            ),
            (
                "ICorProfilerCallback11",
                g(
                    0x42350846,
                    0xAAED,
                    0x47F7,
                    [0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE],
                ),
            ),
            (
                "ICorProfilerInfo",
                g(
                    0x28B5557D,
                    0x3F3F,
                    0x48B4,
                    [0x90, 0xB2, 0x5F, 0x9E, 0xEA, 0x2F, 0x6C, 0x48],
                ),
            ),
            (
                "ICorProfilerInfo2",
                g(
                    0xCC0935CD,
                    0xA518,
                    0x487D,
                    [0xB0, 0xBB, 0xA9, 0x32, 0x14, 0xE6, 0x54, 0x78],
                ),
            ),
            (
                "ICorProfilerInfo3",
                g(
                    0xB555ED4F,
                    0x452A,
                    0x4E54,
                    [0x8B, 0x39, 0xB5, 0x36, 0x0B, 0xAD, 0x32, 0xA0],
                ),
            ),
            (
                "ICorProfilerInfo4",
                g(
                    0x0D8FDCAA,
                    0x6257,
                    0x47BF,
                    [0xB1, 0xBF, 0x94, 0xDA, 0xC8, 0x84, 0x66, 0xEE],
                ),
            ),
            (
                "ICorProfilerInfo5",
                g(
                    0x07602928,
                    0xCE38,
                    0x4B83,
                    [0x81, 0xE7, 0x74, 0xAD, 0xAF, 0x78, 0x12, 0x14],
                ),
            ),
            (
                "ICorProfilerInfo6",
                g(
                    0xF30A070D,
                    0xBFFB,
                    0x46A7,
                    [0xB1, 0xD8, 0x87, 0x81, 0xEF, 0x7B, 0x69, 0x8A],
                ),
            ),
            (
                "ICorProfilerInfo7",
                g(
                    0x9AEECC0D,
                    0x63E0,
                    0x4187,
                    [0x8C, 0x00, 0xE3, 0x12, 0xF5, 0x03, 0xF6, 0x63],
                ),
            ),
            (
                "ICorProfilerInfo8",
                g(
                    0xC5AC80A6,
                    0x782E,
                    0x4716,
                    [0x80, 0x44, 0x39, 0x59, 0x8C, 0x60, 0xCF, 0xBF],
                ),
            ),
            (
                "ICorProfilerInfo9",
                g(
                    0x008170DB,
                    0xF8CC,
                    0x4796,
                    [0x9A, 0x51, 0xDC, 0x8A, 0xA0, 0xB4, 0x70, 0x12],
                ),
            ),
            (
                "ICorProfilerInfo10",
                g(
                    0x2F1B5152,
                    0xC869,
                    0x40C9,
                    [0xAA, 0x5F, 0x3A, 0xBE, 0x02, 0x6B, 0xD7, 0x20],
                ),
            ),
            (
                "ICorProfilerInfo11",
                g(
                    0x06398876,
                    0x8987,
                    0x4154,
                    [0xB6, 0x21, 0x40, 0xA0, 0x0D, 0x6E, 0x4D, 0x04],
                ),
            ),
            (
                "ICorProfilerInfo12",
                g(
                    0x27B24CCD,
                    0x1CB1,
                    0x47C5,
                    [0x96, 0xEE, 0x98, 0x19, 0x0D, 0xC3, 0x09, 0x59],
                ),
            ),
            (
                "ICorProfilerInfo13",
                g(
                    0x6E6C7EE2,
                    0x0701,
                    0x4EC2,
                    [0x9D, 0x29, 0x2E, 0x87, 0x33, 0xB6, 0x69, 0x34],
                ),
            ),
            (
                "ICorProfilerInfo14",
                g(
                    0xF460E352,
                    0xD76D,
                    0x4FE9,
                    [0x83, 0x5F, 0xF6, 0xAF, 0x9D, 0x6E, 0x86, 0x2D],
                ),
            ),
            (
                "ICorProfilerInfo15",
                g(
                    0xB446462D,
                    0xBD22,
                    0x41DD,
                    [0x87, 0x2D, 0xDC, 0x71, 0x4C, 0x49, 0xEB, 0x56],
                ),
            ),
            (
                "ICorProfilerObjectEnum",
                g(
                    0x2C6269BD,
                    0x2D13,
                    0x4321,
                    [0xAE, 0x12, 0x66, 0x86, 0x36, 0x5F, 0xD6, 0xAF],
                ),
            ),
            (
                "ICorProfilerFunctionEnum",
                g(
                    0xFF71301A,
                    0xB994,
                    0x429D,
                    [0xA1, 0x0B, 0xB3, 0x45, 0xA6, 0x52, 0x80, 0xEF],
                ),
            ),
            (
                "ICorProfilerModuleEnum",
                g(
                    0xB0266D75,
                    0x2081,
                    0x4493,
                    [0xAF, 0x7F, 0x02, 0x8B, 0xA3, 0x4D, 0xB8, 0x91],
                ),
            ),
            (
                "IMethodMalloc",
                g(
                    0xA0EFB28B,
                    0x6EE2,
                    0x4D7B,
                    [0xB9, 0x83, 0xA7, 0x5E, 0xF7, 0xBE, 0xED, 0xB8],
                ),
            ),
            (
                "ICorProfilerFunctionControl",
                g(
                    0xF0963021,
                    0xE1EA,
                    0x4732,
                    [0x85, 0x81, 0xE0, 0x1B, 0x0B, 0xD3, 0xC0, 0xC6],
                ),
            ),
            (
                "ICorProfilerMethodEnum",
                g(
                    0xFCCEE788,
                    0x0088,
                    0x454B,
                    [0xA8, 0x11, 0xC9, 0x9F, 0x29, 0x8D, 0x19, 0x42],
                ),
            ),
            (
                "ICorProfilerThreadEnum",
                g(
                    0x571194F7,
                    0x25ED,
                    0x419F,
                    [0xAA, 0x8B, 0x70, 0x16, 0xB3, 0x15, 0x97, 0x01],
                ),
            ),
            (
                "ICorProfilerAssemblyReferenceProvider",
                g(
                    0x66A78C24,
                    0x2EEF,
                    0x4F65,
                    [0xB4, 0x5F, 0xDD, 0x1D, 0x80, 0x38, 0xBF, 0x3C],
                ),
            ),
        ];
        assert_eq!(expected.len(), KNOWN_IIDS.len());
        for ((en, eg), (kn, kg)) in expected.iter().zip(KNOWN_IIDS) {
            assert_eq!(en, kn);
            assert_eq!(eg, kg, "{kn}");
        }
    }

    #[test]
    fn lookup_by_iid() {
        assert_eq!(
            iid_name(&IID_ICorProfilerCallback9),
            Some("ICorProfilerCallback9")
        );
        assert_eq!(iid_name(&GUID::default()), None);
        assert_eq!(
            IID_ICorProfilerCallback2.to_string(),
            "{8A8CC829-CCF2-49FE-BBAE-0F022228071A}"
        );
    }
}
